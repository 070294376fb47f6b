import Foundation

/// Puts a Firebase JSON document's keys in RTDB order, at any size, for readers that need them so
/// (`TreeComparison`). Exports written by scripts come in other orders: Python's `json.dump` keeps insertion
/// order, and `sort_keys` or `jq -S` sort by bytes, which puts `"10"` before `"9"` and `"-K…"` push IDs among
/// negative numbers.
///
/// Every leaf becomes a record keyed by the order of its path (nulls and empty objects too, which decide what a
/// repeated key leaves); records are sorted in memory in runs of about `runBytes`, runs beyond the last go to
/// one temporary file, and merging them gives the document back as JSON text in RTDB order (`.priority` first,
/// then `.value`), which `SortedTreeSource` hands out as a `ByteSource`. A key repeated in one object keeps its
/// last occurrence, as import does. Memory: one run in memory and 256 KB per run on disk; disk: about three times
/// the document, in an unlinked file that vanishes with the process.
///
/// ```swift
/// var sorted = try TreeSorter.sort(FileDescriptorSource(descriptor: fd, name: "export.json"))
/// var reader = JSONReader(source: sorted)
/// ```
public enum TreeSorter {
    /// Where temporary files go unless told otherwise: `$TMPDIR`, else `/tmp`.
    public static var defaultTemporaryDirectory: String { TemporaryFile.defaultDirectory }

    /// How many runs one merge reads at once; more are merged in passes first.
    static let mergeFanIn = 64

    /// Reads all of `source`, a JSON document, and returns it with every object's keys in RTDB order.
    /// Malformed JSON throws here, with its position in `source`.
    public static func sort(
        _ source: some ByteSource, temporaryDirectory: String = defaultTemporaryDirectory, runBytes: Int = 32 << 20
    ) throws -> SortedTreeSource {
        var collector = RecordCollector(runBytes: runBytes, temporaryDirectory: temporaryDirectory)
        var reader = JSONReader(source: source)
        try collector.collect(&reader)
        let runs = try collector.finish()
        return SortedTreeSource(runs: runs, bytesRead: reader.bytesRead, temporaryDirectory: temporaryDirectory)
    }
}

/// Sorted runs of records: at most one in memory (the last), the rest in a temporary file; and the long strings
/// the records point to, in a file of their own.
struct SortedRuns {
    var memory: MemoryRun?
    var file: TemporaryFile?
    var onDisk: [DiskRun.Extent] = []
    var values: TemporaryFile?
}

/// A record is `[u32 length][u32 order length][order][u32 keys length][keys][value]`, native byte order, with
/// the length counting what follows it. The order is the path's, element by element: a rank (0x10 `.priority`,
/// 0x11 `.value`, 0x12 any other key), the key's RTDB order (`FirebaseKey.appendOrder`) with the bytes 0, 1 and
/// 2 escaped as 2 and 3, 4 or 5, the byte 1, and the key's place among its siblings counted down (four bytes, big
/// endian) so that a repeated key's occurrences part, the last first. Byte order of orders is then RTDB order of
/// paths. The keys are the path's keys as written, each `[u32 length][UTF-8]`; the value is a scalar as JSON,
/// `null` or `{}`, or for a string longer than `longString` bytes (a photo in base64) where its JSON lies in the
/// values file: the byte 0xFF, then offset and length (u64 each), so that records stay small however long the
/// values are.
enum SortRecord {
    static let longString = 1 << 16
    static let outOfLine: UInt8 = 0xFF
    static let rankPriority: UInt8 = 0x10, rankValue: UInt8 = 0x11, rankKey: UInt8 = 0x12
    /// Ends each element's key order; no other byte of an element's key order is this low.
    static let elementEnd: UInt8 = 1
    /// Bytes of an element after its key order: `elementEnd` and the sibling place.
    static let elementTail = 5

    @inline(__always)
    static func loadLength(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> Int {
        Int(bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
    }

    /// The order part of the record starting at `record` (its length field first).
    @inline(__always)
    static func order(of record: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: record[8..<(8 + loadLength(record, at: 4))])
    }

    /// -1, 0 or 1 as the record `a` sorts before, with or after `b`.
    @inline(__always)
    static func compare(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Int {
        let x = order(of: a), y = order(of: b)
        let common = min(x.count, y.count)
        if common > 0, let first = x.baseAddress, let second = y.baseAddress {
            let result = memcmp(first, second, common)
            if result != 0 { return result < 0 ? -1 : 1 }
        }
        return x.count == y.count ? 0 : (x.count < y.count ? -1 : 1)
    }

    static func appendLength(_ length: Int, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: UInt32(truncatingIfNeeded: length)) { bytes.append(contentsOf: $0) }
    }
}

/// Reads a document token by token and turns it into sorted runs of records.
struct RecordCollector {
    private let runBytes: Int
    private let temporaryDirectory: String
    private var arena: [UInt8] = []
    private var starts: [Int] = []
    private var runs = SortedRuns()
    /// The order and keys of the path the reader is at.
    private var order: [UInt8] = []
    private var keys: [UInt8] = []
    private var scratch: [UInt8] = []

    /// An open object or array: how many children it has had, and its path's order and keys lengths.
    private struct Frame {
        var children: UInt32 = 0
        let orderLength: Int
        let keysLength: Int
    }

    init(runBytes: Int, temporaryDirectory: String) {
        self.runBytes = max(runBytes, 1 << 12)
        self.temporaryDirectory = temporaryDirectory
        arena.reserveCapacity(self.runBytes + (1 << 16))
    }

    /// Reads the document, iteratively (deep nesting cannot exhaust the stack), into records.
    mutating func collect(_ reader: inout JSONReader) throws {
        var frames: [Frame] = []
        try reader.next()
        while true {
            if reader.token == .objectStart || reader.token == .arrayStart {
                frames.append(Frame(orderLength: order.count, keysLength: keys.count))
            } else {
                try addLeaf(&reader)
            }
            // On to the next value: the next child of the innermost container that has one.
            var hasNext = false
            while let frame = frames.last {
                order.removeSubrange(frame.orderLength...)
                keys.removeSubrange(frame.keysLength...)
                if let key = try reader.nextChild() {
                    appendElement(key, place: frame.children)
                    frames[frames.count - 1].children &+= 1
                    hasNext = true
                    break
                }
                if frame.children == 0 { try addRecord { $0.append(contentsOf: "{}".utf8) } }
                frames.removeLast()
            }
            if !hasNext { break }
        }
        try reader.next()
    }

    /// The runs, the last one left in memory.
    mutating func finish() throws -> SortedRuns {
        sortRun()
        try runs.file?.flush()
        try runs.values?.flush()
        runs.memory = MemoryRun(arena: arena, starts: starts)
        arena = []
        starts = []
        return runs
    }

    private mutating func appendElement(_ key: String, place: UInt32) {
        var key = key
        key.withUTF8 { key in
            if key.elementsEqual(FirebaseKey.priority.utf8) {
                order.append(SortRecord.rankPriority)
            } else if key.elementsEqual(FirebaseKey.value.utf8) {
                order.append(SortRecord.rankValue)
            } else {
                order.append(SortRecord.rankKey)
                scratch.removeAll(keepingCapacity: true)
                FirebaseKey.appendOrder(of: key, to: &scratch)
                for byte in scratch {
                    if byte <= 2 {
                        order.append(2)
                        order.append(byte + 3)
                    } else {
                        order.append(byte)
                    }
                }
            }
            order.append(SortRecord.elementEnd)
            withUnsafeBytes(of: (~place).bigEndian) { order.append(contentsOf: $0) }
            SortRecord.appendLength(key.count, to: &keys)
            keys.append(contentsOf: key)
        }
    }

    private mutating func addLeaf(_ reader: inout JSONReader) throws {
        switch reader.token {
        case .string where reader.text.count > SortRecord.longString:
            let (offset, length) = try storeLongString(reader.text)
            try addRecord { record in
                record.append(SortRecord.outOfLine)
                withUnsafeBytes(of: UInt64(offset)) { record.append(contentsOf: $0) }
                withUnsafeBytes(of: UInt64(length)) { record.append(contentsOf: $0) }
            }
        case .string:
            let text = reader.text
            // Escaping may make a string up to six times longer.
            try addRecord(reserving: text.count * 6 + 2) { JSONTextWriter.appendQuoted(text, to: &$0) }
        case .number:
            let number = reader.number
            guard number.isFinite else {
                // Kept as written: the comparison lists it as a reject, as import does.
                let text = reader.text
                try addRecord { $0.append(contentsOf: text) }
                return
            }
            try addRecord { $0.append(contentsOf: JavaScriptNumber.format(number == 0 ? 0 : number).utf8) }
        case .true: try addRecord { $0.append(contentsOf: "true".utf8) }
        case .false: try addRecord { $0.append(contentsOf: "false".utf8) }
        default: try addRecord { $0.append(contentsOf: "null".utf8) }
        }
    }

    /// Writes a long string's JSON to the values file, escaped a megabyte at a time; returns where it lies.
    private mutating func storeLongString(_ text: UnsafeBufferPointer<UInt8>) throws -> (offset: Int, length: Int) {
        let file = try runs.values ?? TemporaryFile(in: temporaryDirectory)
        runs.values = file
        let offset = file.size
        var piece: [UInt8] = [UInt8(ascii: "\"")]
        for start in stride(from: 0, to: text.count, by: 1 << 20) {
            let end = min(start + (1 << 20), text.count)
            JSONTextWriter.appendEscaped(UnsafeBufferPointer(rebasing: text[start..<end]), to: &piece)
            if end == text.count { piece.append(UInt8(ascii: "\"")) }
            try piece.withUnsafeBytes { try file.append($0) }
            piece.removeAll(keepingCapacity: true)
        }
        return (offset, file.size - offset)
    }

    /// Appends a record for the current path, its value written by `value`; a full run is sorted and written
    /// out first.
    private mutating func addRecord(reserving valueBytes: Int = 32, _ value: (inout [UInt8]) -> Void) throws {
        let needed = 12 + order.count + keys.count + valueBytes
        if !starts.isEmpty, arena.count + needed > max(runBytes, arena.capacity) { try spill() }
        let start = arena.count
        SortRecord.appendLength(0, to: &arena)
        SortRecord.appendLength(order.count, to: &arena)
        arena.append(contentsOf: order)
        SortRecord.appendLength(keys.count, to: &arena)
        arena.append(contentsOf: keys)
        value(&arena)
        let length = UInt32(arena.count - start - 4)
        arena.withUnsafeMutableBytes { $0.storeBytes(of: length, toByteOffset: start, as: UInt32.self) }
        starts.append(start)
        if arena.count >= runBytes { try spill() }
    }

    private mutating func sortRun() {
        arena.withUnsafeBytes { bytes in
            starts.sort { a, b in
                SortRecord.compare(
                    UnsafeRawBufferPointer(rebasing: bytes[a...]), UnsafeRawBufferPointer(rebasing: bytes[b...])) < 0
            }
        }
    }

    /// Sorts the records in memory and appends them to the temporary file as one run.
    private mutating func spill() throws {
        guard !starts.isEmpty else { return }
        sortRun()
        let file = try runs.file ?? TemporaryFile(in: temporaryDirectory)
        runs.file = file
        let offset = file.size
        try arena.withUnsafeBytes { bytes in
            for start in starts {
                try file.append(
                    UnsafeRawBufferPointer(
                        rebasing: bytes[start..<(start + 4 + SortRecord.loadLength(bytes, at: start))]))
            }
        }
        runs.onDisk.append(DiskRun.Extent(offset: offset, length: file.size - offset))
        arena.removeAll(keepingCapacity: true)
        starts.removeAll(keepingCapacity: true)
    }
}
