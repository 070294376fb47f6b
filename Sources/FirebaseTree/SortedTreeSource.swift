import Foundation

/// A document sorted by `TreeSorter`, handed out as JSON text in RTDB order: the merge of its sorted runs,
/// turned back into nested objects as it is read.
public struct SortedTreeSource: ByteSource {
    private let writer: SortedTreeWriter
    /// Bytes read from the unsorted document.
    public let bytesRead: Int
    /// How many runs of records went to disk (0 when the document's records fit in memory).
    public let runsOnDisk: Int

    init(runs: SortedRuns, bytesRead: Int, temporaryDirectory: String) {
        self.bytesRead = bytesRead
        runsOnDisk = runs.onDisk.count
        writer = SortedTreeWriter(runs: runs, temporaryDirectory: temporaryDirectory)
    }

    /// The next bytes of the sorted document.
    public mutating func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        try writer.read(into: buffer)
    }
}

/// Writes the records of a merge as JSON text: opens and closes objects where consecutive paths part, and
/// drops the records of a repeated key's earlier occurrences (the merge gives the last one first).
final class SortedTreeWriter {
    private var runs: SortedRuns?
    private let temporaryDirectory: String
    private var merge: RecordMerge?
    private let values: TemporaryFile?
    /// A long string's JSON, in `values`, to hand out before any record after it.
    private var pendingValue: (offset: Int, length: Int)?
    private var text: [UInt8] = []
    private var textOffset = 0
    private var isDone = false
    /// The order of the last record written, and where each of its elements ends.
    private var previous: [UInt8] = []
    private var previousEnds: [Int] = []
    private var hasPrevious = false
    private var ends: [Int] = []

    init(runs: SortedRuns, temporaryDirectory: String) {
        self.runs = runs
        values = runs.values
        self.temporaryDirectory = temporaryDirectory
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        while pendingValue == nil, text.count - textOffset < buffer.count, !isDone { try writeNext() }
        guard textOffset < text.count else { return try readPendingValue(into: buffer) }
        let count = min(buffer.count, text.count - textOffset)
        text.withUnsafeBytes {
            UnsafeMutableRawBufferPointer(rebasing: buffer[..<count]).copyMemory(
                from: UnsafeRawBufferPointer(rebasing: $0[textOffset..<textOffset + count]))
        }
        textOffset += count
        // Drop what was handed out once it outweighs what is left (a long value may have grown the text).
        if textOffset >= text.count - textOffset {
            text.removeSubrange(..<textOffset)
            textOffset = 0
            if text.capacity > 4 << 20, text.count < 1 << 20 { text = Array(text) }
        }
        return count
    }

    /// The next bytes of the long string the last record points to, read from the values file; 0 at the end.
    private func readPendingValue(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        guard let (offset, length) = pendingValue, let values else { return 0 }
        let count = try values.read(at: offset, into: UnsafeMutableRawBufferPointer(rebasing: buffer.prefix(length)))
        guard count > 0 else { throw TreeError(.scratchSpace, "a temporary file of long strings ended early") }
        pendingValue = count == length ? nil : (offset + count, length - count)
        return count
    }

    private func writeNext() throws {
        if merge == nil, let runs {
            // The merge starts at the first read, so that sorting and its errors stay in `TreeSorter.sort`
            // unless the runs need merging passes.
            merge = try RecordMerge(runs: runs, temporaryDirectory: temporaryDirectory)
            self.runs = nil
        }
        guard let record = try merge?.next() else {
            closeAll()
            isDone = true
            merge = nil
            return
        }
        try write(record)
    }

    private func write(_ record: UnsafeRawBufferPointer) throws {
        let order = SortRecord.order(of: record)
        ends.removeAll(keepingCapacity: true)
        var index = 0
        while index < order.count {
            while order[index] != SortRecord.elementEnd { index += 1 }
            index += SortRecord.elementTail
            ends.append(index)
        }
        if hasPrevious {
            let level = try partingLevel(order)
            guard let level else { return }
            for _ in (level + 1)..<previousEnds.count { text.append(UInt8(ascii: "}")) }
            text.append(UInt8(ascii: ","))
            writeKeys(of: record, order: order, from: level)
        } else {
            if !ends.isEmpty { text.append(UInt8(ascii: "{")) }
            writeKeys(of: record, order: order, from: 0)
        }
        previous.removeAll(keepingCapacity: true)
        previous.append(contentsOf: order)
        swap(&previousEnds, &ends)
        hasPrevious = true
    }

    /// The first level where the path of `order` parts from the previous record's, or nil when the record
    /// belongs to an earlier occurrence of a repeated key whose last occurrence (which replaces it) came before.
    /// Whether `a` and `b` hold the same bytes in `range`.
    private static func same(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer, in range: Range<Int>) -> Bool {
        guard let x = a.baseAddress, let y = b.baseAddress else { return range.isEmpty }
        return memcmp(x + range.lowerBound, y + range.lowerBound, range.count) == 0
    }

    private func partingLevel(_ order: UnsafeRawBufferPointer) throws -> Int? {
        try previous.withUnsafeBytes { previous in
            var level = 0
            while level < ends.count, level < previousEnds.count, ends[level] == previousEnds[level],
                Self.same(order, previous, in: 0..<ends[level])
            {
                level += 1
            }
            guard level < ends.count, level < previousEnds.count else {
                throw TreeError(.malformedInput, "a sorted tree holds one path twice")
            }
            let start = level == 0 ? 0 : ends[level - 1]
            let keyLength = ends[level] - SortRecord.elementTail - start
            let sameKey =
                keyLength == previousEnds[level] - SortRecord.elementTail - start
                && Self.same(order, previous, in: start..<start + keyLength)
            return sameKey ? nil : level
        }
    }

    /// Writes the record's keys from `level` on, opening an object before each but the first, then its value.
    private func writeKeys(of record: UnsafeRawBufferPointer, order: UnsafeRawBufferPointer, from level: Int) {
        let keysOffset = 8 + order.count
        let keys = UnsafeRawBufferPointer(
            rebasing: record[(keysOffset + 4)..<(keysOffset + 4 + SortRecord.loadLength(record, at: keysOffset))])
        var keyOffset = 0
        for keyLevel in 0..<ends.count {
            let length = SortRecord.loadLength(keys, at: keyOffset)
            if keyLevel >= level {
                if keyLevel > level { text.append(UInt8(ascii: "{")) }
                let key = UnsafeRawBufferPointer(rebasing: keys[(keyOffset + 4)..<(keyOffset + 4 + length)])
                JSONTextWriter.appendQuoted(key.assumingMemoryBound(to: UInt8.self), to: &text)
                text.append(UInt8(ascii: ":"))
            }
            keyOffset += 4 + length
        }
        let value = UnsafeRawBufferPointer(rebasing: record[(keysOffset + 4 + keys.count)...])
        if value.first == SortRecord.outOfLine {
            pendingValue = (
                Int(value.loadUnaligned(fromByteOffset: 1, as: UInt64.self)),
                Int(value.loadUnaligned(fromByteOffset: 9, as: UInt64.self))
            )
        } else {
            text.append(contentsOf: value)
        }
    }

    /// Closes the objects the last record left open.
    private func closeAll() {
        guard hasPrevious else { return }
        for _ in 0..<previousEnds.count { text.append(UInt8(ascii: "}")) }
    }
}
