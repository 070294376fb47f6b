/// A sorted run of records read one at a time; `current` stays valid until the next `advance()`.
protocol RecordCursor: AnyObject {
    /// The record the cursor is on (its length field first), nil past the last.
    var current: UnsafeRawBufferPointer? { get }
    /// Moves to the next record.
    func advance() throws
}

/// The last run, kept in memory: the records in one buffer and their starts in sorted order. Each record is
/// copied out when the cursor reaches it, so that `current` has a stable address.
final class MemoryRun: RecordCursor {
    private let arena: [UInt8]
    private let starts: [Int]
    private var index = -1
    private var record: UnsafeMutableRawBufferPointer = .allocate(byteCount: 1 << 12, alignment: 8)
    private(set) var current: UnsafeRawBufferPointer?

    /// The records in `arena` at `starts`, in that order.
    init(arena: [UInt8], starts: [Int]) {
        self.arena = arena
        self.starts = starts
        advance()
    }

    deinit {
        record.deallocate()
    }

    func advance() {
        index += 1
        guard index < starts.count else {
            current = nil
            return
        }
        let start = starts[index]
        arena.withUnsafeBytes { bytes in
            let length = 4 + SortRecord.loadLength(bytes, at: start)
            if length > record.count {
                record.deallocate()
                record = .allocate(byteCount: length, alignment: 8)
            }
            record.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[start..<(start + length)]))
            current = UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(record)[..<length])
        }
    }
}

/// A run written to a temporary file, read through a buffer of its own.
final class DiskRun: RecordCursor {
    /// Where a run lies in its file.
    struct Extent {
        var offset: Int
        var length: Int
    }

    private let file: TemporaryFile
    private var position: Int
    private let end: Int
    private var buffer: UnsafeMutableRawBufferPointer
    /// The file offset of the buffer's first byte, and how many bytes it holds.
    private var bufferStart = 0, buffered = 0
    private(set) var current: UnsafeRawBufferPointer?

    /// The run at `extent` of `file`, through a buffer of `bufferBytes` (larger when a record is).
    init(file: TemporaryFile, extent: Extent, bufferBytes: Int = 256 << 10) throws {
        self.file = file
        position = extent.offset
        end = extent.offset + extent.length
        buffer = .allocate(byteCount: bufferBytes, alignment: 8)
        try advance()
    }

    deinit {
        buffer.deallocate()
    }

    func advance() throws {
        guard position < end else {
            current = nil
            return
        }
        try load(position, count: 4)
        let length = 4 + SortRecord.loadLength(UnsafeRawBufferPointer(buffer), at: position - bufferStart)
        try load(position, count: length)
        let start = position - bufferStart
        current = UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(buffer)[start..<(start + length)])
        position += length
    }

    /// Makes the buffer hold the `count` bytes at `offset`, refilling it from there when it does not.
    private func load(_ offset: Int, count: Int) throws {
        guard offset < bufferStart || offset + count > bufferStart + buffered else { return }
        if count > buffer.count {
            buffer.deallocate()
            buffer = .allocate(byteCount: count, alignment: 8)
        }
        bufferStart = offset
        buffered = try file.read(
            at: offset, into: UnsafeMutableRawBufferPointer(rebasing: buffer[..<min(buffer.count, end - offset)]))
        guard buffered >= count else {
            throw TreeError(.scratchSpace, "a temporary file of sorted records ended early")
        }
    }
}

/// Merges sorted runs into one sorted sequence of records, through a heap of their cursors.
final class RecordMerge {
    private var cursors: [any RecordCursor] = []
    private var heap: [Int] = []
    /// The cursor whose record `next()` returned last: it moves on at the next call.
    private var taken: Int?
    /// Files of intermediate passes, kept open while their runs are read.
    private var files: [TemporaryFile] = []

    /// A merge of `runs`; when more runs lie on disk than one merge reads at once, they are merged in passes
    /// into fewer, longer ones first (in new files, each old one freed once merged).
    init(runs: SortedRuns, temporaryDirectory: String) throws {
        var file = runs.file
        var extents = runs.onDisk
        while extents.count > TreeSorter.mergeFanIn, let source = file {
            let target = try TemporaryFile(in: temporaryDirectory)
            var merged: [DiskRun.Extent] = []
            for group in stride(from: 0, to: extents.count, by: TreeSorter.mergeFanIn) {
                let pass = try RecordMerge(
                    cursors: extents[group..<min(group + TreeSorter.mergeFanIn, extents.count)].map {
                        try DiskRun(file: source, extent: $0)
                    })
                let offset = target.size
                while let record = try pass.next() { try target.append(record) }
                merged.append(DiskRun.Extent(offset: offset, length: target.size - offset))
            }
            try target.flush()
            file = target
            extents = merged
        }
        if let file {
            files.append(file)
            cursors = try extents.map { try DiskRun(file: file, extent: $0) }
        }
        if let memory = runs.memory { cursors.append(memory) }
        buildHeap()
    }

    private init(cursors: [any RecordCursor]) {
        self.cursors = cursors
        buildHeap()
    }

    /// The next record in order, valid until the next call; nil after the last.
    func next() throws -> UnsafeRawBufferPointer? {
        if let taken {
            try cursors[taken].advance()
            if cursors[taken].current == nil {
                heap[0] = heap[heap.count - 1]
                heap.removeLast()
            }
            if !heap.isEmpty { siftDown(0) }
            self.taken = nil
        }
        guard let top = heap.first else { return nil }
        taken = top
        return cursors[top].current
    }

    private func buildHeap() {
        heap = cursors.indices.filter { cursors[$0].current != nil }
        for index in stride(from: heap.count / 2 - 1, through: 0, by: -1) { siftDown(index) }
    }

    private func precedes(_ a: Int, _ b: Int) -> Bool {
        // Only cursors with a current record are in the heap.
        guard let first = cursors[heap[a]].current, let second = cursors[heap[b]].current else { return false }
        return SortRecord.compare(first, second) < 0
    }

    private func siftDown(_ start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1
            guard left < heap.count else { return }
            var least = left
            if left + 1 < heap.count, precedes(left + 1, left) { least = left + 1 }
            guard precedes(least, parent) else { return }
            heap.swapAt(least, parent)
            parent = least
        }
    }
}
