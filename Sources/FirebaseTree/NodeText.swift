import Foundation

/// The JSON text of one node, as a comparison hands it over to be written: in memory while it is small, in a
/// temporary file beyond `memoryLimit`, so that a record of any size costs bounded memory.
public struct NodeText {
    /// The text's last bytes (all of them while it is small), appended to as it is written.
    var bytes: [UInt8]
    private var file: TemporaryFile?
    private var fileCount = 0
    /// Bytes of text in all.
    public var count: Int { fileCount + bytes.count }

    /// Bytes kept in memory before the text goes to a temporary file.
    static let memoryLimit = 1 << 20

    /// The text of `string`.
    public init(_ string: String) {
        bytes = Array(string.utf8)
    }

    /// An empty text, whose buffer is reused as it is written again.
    init() {
        bytes = []
        bytes.reserveCapacity(512)
    }

    /// Empties the text (keeping its buffer; a file is given up).
    mutating func reset() {
        bytes.removeAll(keepingCapacity: true)
        file = nil
        fileCount = 0
    }

    /// Moves the in-memory part to the temporary file once it passed `memoryLimit`.
    mutating func spillIfLarge(in directory: String) throws {
        guard bytes.count > Self.memoryLimit else { return }
        let target = try file ?? TemporaryFile(in: directory)
        try bytes.withUnsafeBytes { try target.append($0) }
        try target.flush()
        file = target
        fileCount += bytes.count
        bytes.removeAll(keepingCapacity: true)
    }

    /// Whether the text is `null`.
    var isNull: Bool { file == nil && bytes.elementsEqual("null".utf8) }

    /// Calls `body` with the text's bytes, chunk by chunk, in order.
    public func withChunks(_ body: (UnsafeRawBufferPointer) throws -> Void) throws {
        if let file {
            var buffer = [UInt8](repeating: 0, count: 1 << 16)
            var offset = 0
            while true {
                let read = try buffer.withUnsafeMutableBytes { try file.read(at: offset, into: $0) }
                if read == 0 { break }
                try buffer.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[..<read])) }
                offset += read
            }
        }
        try bytes.withUnsafeBytes { try body($0) }
    }

    /// The text as a source, from its start.
    var source: any ByteSource {
        guard let file else { return MemorySource(bytes) }
        return TextSource(file: TemporaryFile.Reader(file), tail: MemorySource(bytes))
    }

    /// Whether two texts hold the same bytes.
    func equals(_ other: NodeText) throws -> Bool {
        guard count == other.count else { return false }
        if file == nil, other.file == nil { return bytes == other.bytes }
        var mine = source
        var theirs = other.source
        var a = [UInt8](repeating: 0, count: 1 << 16)
        var b = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let read = try a.withUnsafeMutableBytes { try Self.fill($0, from: &mine) }
            let readOther = try b.withUnsafeMutableBytes { try Self.fill($0, from: &theirs) }
            guard read == readOther, a[..<read] == b[..<read] else { return false }
            if read == 0 { return true }
        }
    }

    /// Reads until `buffer` is full or the source ends; returns the bytes read.
    private static func fill(_ buffer: UnsafeMutableRawBufferPointer, from source: inout any ByteSource) throws -> Int {
        var done = 0
        while done < buffer.count {
            let read = try source.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[done...]))
            if read == 0 { break }
            done += read
        }
        return done
    }

    /// The file's part, then the memory's.
    private struct TextSource: ByteSource {
        var file: TemporaryFile.Reader
        var tail: MemorySource
        var inTail = false

        mutating func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
            if !inTail {
                let read = try file.read(into: buffer)
                if read > 0 { return read }
                inTail = true
            }
            return try tail.read(into: buffer)
        }
    }
}
