/// One event of a server-sent event stream (the EventSource format), as a browser's EventSource dispatches it.
public struct ServerSentEvent {
    /// The `event:` field; "message" when the event named none.
    public var name: String
    /// The `data:` lines, joined with line feeds.
    public var data: EventData
    /// The last `id:` seen so far (EventSource's last event ID), nil before any.
    public var lastEventID: String?
    /// The line the event started on, from 1.
    public var line: Int
}

/// The data of one event: in memory while small, beyond `memoryLimit` in a nameless temporary file, so that an
/// event of any size (a Realtime Database's first `put` holds the whole database) costs bounded memory.
public final class EventData {
    /// Bytes kept in memory before the rest goes to a temporary file.
    public static let memoryLimit = 4 << 20

    private var bytes: [UInt8] = []
    private var file: TemporaryFile?
    private let temporaryDirectory: String
    /// How many bytes the data has.
    public private(set) var count = 0
    /// Where the last byte that is not JSON whitespace is, -1 for none: where a JSON envelope closes.
    public private(set) var lastNonWhitespace = -1

    init(temporaryDirectory: String) {
        self.temporaryDirectory = temporaryDirectory
    }

    /// The data whole, when it is small enough to be in memory; nil once it went to a file.
    public var inMemory: [UInt8]? { file == nil ? bytes : nil }

    func append(_ chunk: UnsafeBufferPointer<UInt8>) throws {
        guard !chunk.isEmpty else { return }
        if let last = chunk.lastIndex(where: { !JSONReader.isWhitespace($0) }) { lastNonWhitespace = count + last }
        count += chunk.count
        if let file {
            try file.append(UnsafeRawBufferPointer(chunk))
            return
        }
        bytes.append(contentsOf: chunk)
        if bytes.count > Self.memoryLimit {
            let file = try TemporaryFile(in: temporaryDirectory)
            try bytes.withUnsafeBytes { try file.append($0) }
            bytes = []
            self.file = file
        }
    }

    /// The bytes from `offset`, `length` of them (to the end when nil).
    public func source(from offset: Int = 0, length: Int? = nil) throws -> any ByteSource {
        let end = length.map { min(count, offset + $0) } ?? count
        if let file {
            try file.flush()
            return FileRangeSource(file: file, offset: offset, end: end)
        }
        return MemorySource(Array(bytes[min(offset, bytes.count)..<max(min(offset, bytes.count), end)]))
    }
}

/// A range of a temporary file, read from its start.
struct FileRangeSource: ByteSource {
    let file: TemporaryFile
    var offset: Int
    let end: Int

    mutating func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        let wanted = min(buffer.count, end - offset)
        guard wanted > 0 else { return 0 }
        let count = try file.read(at: offset, into: UnsafeMutableRawBufferPointer(rebasing: buffer[..<wanted]))
        offset += count
        return count
    }
}

/// Reads a server-sent event stream by the EventSource rules (WHATWG HTML, "Server-sent events"): lines end with
/// LF, CRLF or CR; a line starting with `:` is a comment; `field: value` drops one space after the colon, a line
/// without a colon is a field with an empty value; `data` lines join with LF; `id` sets the last event ID (not
/// when it holds NUL), `retry` a reconnection time (digits only); other fields are ignored; a blank line
/// dispatches the event unless it has no data; a byte-order mark at the start is skipped; an event the stream
/// ends inside of, before its blank line, is not dispatched. Reads in chunks, so an event may be cut anywhere
/// between two reads.
public struct EventStreamReader {
    private var source: any ByteSource
    private let temporaryDirectory: String
    private var buffer = [UInt8](repeating: 0, count: 1 << 16)
    private var bufferCount = 0
    private var cursor = 0
    private var isAtEnd = false
    private var hasStarted = false
    private var skipsLineFeed = false

    /// The line being read, from 1.
    public private(set) var line = 1
    /// The last `id:` seen.
    public private(set) var lastEventID: String?
    /// The last valid `retry:`, in milliseconds.
    public private(set) var retryMilliseconds: Int?
    /// Bytes read from the source.
    public private(set) var bytesRead = 0

    /// Whether bytes read from the source wait to be parsed: more of an event, or another one.
    public var hasBufferedInput: Bool { cursor < bufferCount }

    /// Field names and values other than `data` longer than this are cut (an event's name is a word).
    static var maximumFieldBytes: Int { 4096 }

    /// A reader of `source`; large events' data go to temporary files in `temporaryDirectory`.
    public init(source: some ByteSource, temporaryDirectory: String = TreeSorter.defaultTemporaryDirectory) {
        self.source = source
        self.temporaryDirectory = temporaryDirectory
    }

    /// Reads more of the source; false at its end.
    private mutating func fill() throws -> Bool {
        guard !isAtEnd else { return false }
        bufferCount = try buffer.withUnsafeMutableBytes { try source.read(into: $0) }
        cursor = 0
        bytesRead += bufferCount
        if bufferCount == 0 { isAtEnd = true }
        return bufferCount > 0
    }

    /// Starts a `data` line: lines join with a line feed, before each but the first.
    private func beginDataLine(_ data: inout EventData, _ hasData: inout Bool) throws {
        if hasData { try [UInt8(0x0A)].withUnsafeBufferPointer { try data.append($0) } }
        hasData = true
    }

    /// The next event; nil at the end of the stream.
    public mutating func next() throws -> ServerSentEvent? {
        var name: [UInt8] = []
        var data = EventData(temporaryDirectory: temporaryDirectory)
        var hasData = false
        var eventLine = line
        while true {
            // One line: its field name up to the first colon, then the value.
            var field: [UInt8] = []
            var value: [UInt8] = []
            var sawColon = false
            var isComment = false
            var isFirstValueByte = true
            var isEmptyLine = true
            var lineEnded = false
            let isData = { (field: [UInt8]) in field == Array("data".utf8) }
            while !lineEnded {
                if cursor == bufferCount {
                    guard try fill() else {
                        // The stream ended inside an event (or between two): nothing more is dispatched.
                        return nil
                    }
                }
                if !hasStarted {
                    hasStarted = true
                    if bufferCount - cursor < 3, !isAtEnd {
                        // A byte-order mark may be cut by the first read: wait for three bytes.
                        hasStarted = false
                        var more = Array(buffer[cursor..<bufferCount])
                        while more.count < 3 {
                            var chunk = [UInt8](repeating: 0, count: 3 - more.count)
                            let count = try chunk.withUnsafeMutableBytes { try source.read(into: $0) }
                            if count == 0 { break }
                            bytesRead += count
                            more += chunk[..<count]
                        }
                        buffer.replaceSubrange(0..<more.count, with: more)
                        bufferCount = more.count
                        cursor = 0
                        hasStarted = true
                    }
                    if bufferCount - cursor >= 3, buffer[cursor] == 0xEF, buffer[cursor + 1] == 0xBB,
                        buffer[cursor + 2] == 0xBF
                    {
                        cursor += 3
                        continue
                    }
                }
                if skipsLineFeed {
                    skipsLineFeed = false
                    if buffer[cursor] == 0x0A {
                        cursor += 1
                        continue
                    }
                }
                // The rest of the line in this chunk: up to the first CR or LF.
                let start = cursor
                var end = cursor
                while end < bufferCount, buffer[end] != 0x0A, buffer[end] != 0x0D { end += 1 }
                var piece = start
                if end > start {
                    isEmptyLine = false
                    if !sawColon, !isComment {
                        if field.isEmpty, buffer[start] == UInt8(ascii: ":") {
                            isComment = true
                        } else {
                            while piece < end, buffer[piece] != UInt8(ascii: ":") { piece += 1 }
                            if field.count < Self.maximumFieldBytes {
                                field.append(
                                    contentsOf: buffer[start..<min(piece, start + Self.maximumFieldBytes - field.count)]
                                )
                            }
                            if piece < end {
                                sawColon = true
                                piece += 1
                                if isData(field) { try beginDataLine(&data, &hasData) }
                            }
                        }
                    }
                    if sawColon, piece < end {
                        if isFirstValueByte {
                            isFirstValueByte = false
                            if buffer[piece] == 0x20 { piece += 1 }
                        }
                        if isData(field) {
                            try buffer.withUnsafeBufferPointer {
                                try data.append(UnsafeBufferPointer(rebasing: $0[piece..<end]))
                            }
                        } else if value.count < Self.maximumFieldBytes {
                            value.append(
                                contentsOf: buffer[piece..<min(end, piece + Self.maximumFieldBytes - value.count)])
                        }
                    }
                }
                cursor = end
                if end < bufferCount {
                    skipsLineFeed = buffer[end] == 0x0D
                    cursor += 1
                    line += 1
                    lineEnded = true
                }
            }
            if isEmptyLine {
                if hasData {
                    return ServerSentEvent(
                        name: name.isEmpty ? "message" : String(decoding: name, as: UTF8.self), data: data,
                        lastEventID: lastEventID, line: eventLine)
                }
                name = []
                eventLine = line
                continue
            }
            if isComment { continue }
            switch String(decoding: field, as: UTF8.self) {
            case "event":
                name = value
            case "data":
                if !sawColon { try beginDataLine(&data, &hasData) }
            case "id":
                if !value.contains(0) { lastEventID = String(decoding: value, as: UTF8.self) }
            case "retry":
                if !value.isEmpty, value.allSatisfy({ (0x30...0x39).contains($0) }) {
                    retryMilliseconds = Int(String(decoding: value, as: UTF8.self))
                }
            default:
                break
            }
        }
    }
}
