import Foundation
import Testing

@testable import FirebaseTree

@Suite("Byte sources")
struct ByteSourceTests {
    private static let bytes = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 8) }

    private func read(_ count: Int, from source: inout some ByteSource) throws -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: count)
        let got = try buffer.withUnsafeMutableBytes { try source.read(into: $0) }
        return Array(buffer[..<got])
    }

    @Test func aFileSeeksPastWhatItSkipsAndStopsAtItsEnd() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("skip-\(UUID().uuidString)")
        try Data(Self.bytes).write(to: url)
        defer { try? FileManager.default.removeItem(at: url) }
        let descriptor = open(url.path, O_RDONLY)
        #expect(descriptor >= 0)
        defer { close(descriptor) }
        var source = FileDescriptorSource(descriptor: descriptor, name: url.path)
        #expect(try read(10, from: &source) == Array(Self.bytes[0..<10]))
        #expect(try source.skip(50_000) == 50_000)
        #expect(try read(10, from: &source) == Array(Self.bytes[50_010..<50_020]))
        #expect(try source.skip(1 << 30) == 100_000 - 50_020)
        #expect(try source.skip(5) == 0)
        #expect(try read(10, from: &source).isEmpty)
    }

    @Test func aPipeAndMemoryReadWhatTheySkip() throws {
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        let sent = Array(Self.bytes[..<30_000])
        #expect(sent.withUnsafeBytes { write(ends[1], $0.baseAddress, $0.count) } == sent.count)
        close(ends[1])
        defer { close(ends[0]) }
        let sources: [any ByteSource] = [
            FileDescriptorSource(descriptor: ends[0], name: "pipe"), MemorySource(sent, chunkSize: 777),
        ]
        for var source in sources {
            #expect(try source.skip(12_345) == 12_345)
            #expect(try read(5, from: &source) == Array(sent[12_345..<12_350]))
            #expect(try source.skip(1 << 20) == 30_000 - 12_350)
            #expect(try source.skip(1) == 0)
        }
    }
}
