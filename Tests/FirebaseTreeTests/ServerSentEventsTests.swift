import FirebaseTree
import Foundation
import Testing

/// The EventSource rules (WHATWG HTML, "Server-sent events"), as the mirror reads Firebase's stream.
struct ServerSentEventsTests {
    /// Every event of `text` as (name, data), read `chunkSize` bytes at a time.
    private func events(_ text: String, chunkSize: Int = .max) throws -> [String] {
        var reader = EventStreamReader(source: MemorySource(text, chunkSize: chunkSize))
        var events: [String] = []
        while let event = try reader.next() {
            let data = try #require(event.data.inMemory)
            events.append(event.name + "|" + String(decoding: data, as: UTF8.self))
        }
        return events
    }

    static let stream = """
        event: put
        data: {"path": "/", "data": {"a": 1}}

        : a comment
        event: patch
        data: {"path": "/b",
        data:  "data": {"c": true}}
        id: 7
        retry: 3000

        event: keep-alive
        data: null

        data
        data:

        event:put
        data:{"path":"/x","data":null}

        """ + "\n"

    static let expected = [
        #"put|{"path": "/", "data": {"a": 1}}"#, "patch|{\"path\": \"/b\",\n \"data\": {\"c\": true}}",
        "keep-alive|null", "message|\n", #"put|{"path":"/x","data":null}"#,
    ]

    @Test func linesEndWithLFOrCRLFOrCR() throws {
        let got = try events(Self.stream)
        #expect(got == Self.expected, "\(got)")
        #expect(try events(Self.stream.replacingOccurrences(of: "\n", with: "\r\n")) == Self.expected)
        #expect(try events(Self.stream.replacingOccurrences(of: "\n", with: "\r")) == Self.expected)
    }

    @Test func anEventCutAtEveryByteReadsTheSame() throws {
        let crlf = Self.stream.replacingOccurrences(of: "\n", with: "\r\n")
        for chunkSize in 1...40 {
            #expect(try events(Self.stream, chunkSize: chunkSize) == Self.expected, "chunks of \(chunkSize)")
            #expect(try events(crlf, chunkSize: chunkSize) == Self.expected, "CRLF in chunks of \(chunkSize)")
        }
    }

    @Test func idRetryAndUnknownFields() throws {
        var reader = EventStreamReader(
            source: MemorySource("id: 1\nretry: x\nfoo: bar\ndata: a\n\nid\nretry: 250\ndata: b\n\n"))
        let first = try #require(try reader.next())
        #expect(first.lastEventID == "1" && reader.retryMilliseconds == nil)
        let second = try #require(try reader.next())
        #expect(second.lastEventID == "" && reader.retryMilliseconds == 250)
        #expect(try reader.next() == nil)
    }

    @Test func aByteOrderMarkAtTheStartIsSkipped() throws {
        let text = "\u{FEFF}event: put\ndata: 1\n\n"
        for chunkSize in [1, 2, 3, 4, .max] {
            #expect(try events(text, chunkSize: chunkSize) == ["put|1"], "chunks of \(chunkSize)")
        }
        // Only at the start: later it is part of a field's name.
        #expect(try events("data: 1\n\n\u{FEFF}data: 2\n\n") == ["message|1"])
    }

    @Test func anEventTheStreamEndsInsideOfIsNotDispatched() throws {
        #expect(try events("event: put\ndata: 1\n\nevent: put\ndata: 2\n") == ["put|1"])
        #expect(try events("event: put\ndata: 1") == [])
        #expect(try events("") == [])
        // A blank line with no data dispatches nothing and forgets the name.
        #expect(try events("event: put\n\ndata: 3\n\n") == ["message|3"])
    }

    @Test func unknownEventNamesAreReadAsTheyAre() throws {
        #expect(try events("event: rules_changed\ndata: {}\n\n") == ["rules_changed|{}"])
    }

    @Test func aLargeEventGoesToATemporaryFileAndReadsBack() throws {
        let value = String(repeating: "x", count: EventData.memoryLimit + 12_345)
        let text = "event: put\ndata: {\"path\": \"/\", \"data\": \"\(value)\"}  \n\n"
        var reader = EventStreamReader(source: MemorySource(text, chunkSize: 65_521))
        let event = try #require(try reader.next())
        #expect(event.data.inMemory == nil)
        #expect(event.data.count == value.utf8.count + 27)
        var source = try event.data.source(from: 1, length: 7)
        var bytes = [UInt8](repeating: 0, count: 64)
        let count = try bytes.withUnsafeMutableBytes { try source.read(into: $0) }
        #expect(String(decoding: bytes[..<count], as: UTF8.self) == "\"path\":")
        #expect(event.data.lastNonWhitespace == event.data.count - 3)
    }
}
