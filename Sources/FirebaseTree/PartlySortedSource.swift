import Foundation

/// A document handed out with its out-of-order objects sorted (each by `TreeSorter`, as it is reached) and the rest
/// as it is: what a comparison reads when only some objects of a file are out of RTDB order, as where a script
/// appended new keys, rather than a sorted copy of the whole file. `outOfOrderObjects(in:)` finds the objects. A
/// top-level node a `Feed` found out of order only in a tail of its children is not sorted whole: the tail's
/// children, sorted apart, are handed out in their places among the others (`TailMerge`).
///
/// ```swift
/// if let ranges = try PartlySortedSource.outOfOrderObjects(in: try open()) {
///     var reader = JSONReader(source: PartlySortedSource(try open(), sorting: ranges))
/// }
/// ```
public struct PartlySortedSource: ByteSource {
    /// Shared by the slices the sorter reads: a value source copied and read would not move this one on.
    private let base: Shared
    /// Where the objects to sort are known from.
    private enum Objects {
        /// Byte ranges of `base`, in order, none inside another, found before.
        case known([Range<Int>])
        /// A scan finding them in another reading, as this one goes.
        case fed(Feed)
    }

    private let objects: Objects
    /// With `known` ranges, the first that may lie at or after `offset`.
    private var next = 0
    /// Bytes of `base` consumed.
    private var offset = 0
    /// The sorted text of the object being handed out.
    private var sorted: SortedTreeSource?
    /// The top-level node being handed out with its tail's children put in their places.
    private var merge: TailMerge?
    private let temporaryDirectory: String
    /// Bytes the sorter read, in all.
    public private(set) var sortedBytes = 0

    /// `base` (a document from its first byte) with the objects at `ranges` sorted.
    public init(
        _ base: some ByteSource, sorting ranges: [Range<Int>],
        temporaryDirectory: String = TreeSorter.defaultTemporaryDirectory
    ) {
        self.base = Shared(base)
        objects = .known(ranges)
        self.temporaryDirectory = temporaryDirectory
    }

    /// `base` (a document from its first byte) with the objects `feed` finds as it scans another reading of the
    /// document sorted: reads throw `ScanGaveUp` if its scan gives up.
    public init(
        _ base: some ByteSource, sortingWhat feed: Feed,
        temporaryDirectory: String = TreeSorter.defaultTemporaryDirectory
    ) {
        self.base = Shared(base)
        objects = .fed(feed)
        self.temporaryDirectory = temporaryDirectory
    }

    /// The next object at or after `offset` to sort, and how far the document may be read as it is before it.
    private mutating func nextObject() throws -> (object: OutOfOrderObject?, limit: Int) {
        switch objects {
        case .fed(let feed):
            return try feed.next(at: offset)
        case .known(let ranges):
            while next < ranges.count, ranges[next].upperBound <= offset { next += 1 }
            return next < ranges.count ? (OutOfOrderObject(range: ranges[next]), ranges[next].lowerBound) : (nil, .max)
        }
    }

    /// Reads the document as it is up to the next object to sort, then that object sorted, and so on.
    public mutating func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        guard !buffer.isEmpty else { return 0 }
        while true {
            if let merge {
                let count = try read(into: buffer, merging: merge)
                if count > 0 { return count }
                self.merge = nil
                continue
            }
            switch try produce(into: buffer, upTo: .max) {
            case .bytes(let count): return count
            case .tail(let object, let tail): try beginMerge(object, tail: tail)
            }
        }
    }

    /// What `produce` met.
    private enum Produced {
        /// Bytes handed out (0: the document's end, or `produce`'s limit).
        case bytes(Int)
        /// A node to hand out with its tail merged in, which starts here.
        case tail(OutOfOrderObject, (from: Int, bytes: [UInt8]))
    }

    /// Hands out the document as it is and its objects sorted, up to `cap` or the next node with a tail.
    private mutating func produce(into buffer: UnsafeMutableRawBufferPointer, upTo cap: Int) throws -> Produced {
        while true {
            if var current = sorted {
                let count = try current.read(into: buffer)
                sorted = current
                if count > 0 { return .bytes(count) }
                sorted = nil
            }
            let (upcoming, limit) = try nextObject()
            if offset < min(limit, cap) {
                let count = try base.source.read(
                    into: UnsafeMutableRawBufferPointer(rebasing: buffer.prefix(min(limit, cap) - offset)))
                if count == 0, let upcoming {
                    throw TreeError(.unreadable, "the document ended before byte \(upcoming.range.lowerBound)")
                }
                offset += count
                return .bytes(count)
            }
            guard let object = upcoming, offset < cap else { return .bytes(0) }
            if let tail = object.tail { return .tail(object, tail) }
            let range = object.range
            // The object's bytes, from `base`, to the sorter, which reads them all before it returns.
            let slice = Slice(base: base, remaining: range.count)
            sorted = try TreeSorter.sort(slice, temporaryDirectory: temporaryDirectory, runBytes: 8 << 20)
            guard slice.remaining.value == 0 else {
                throw TreeError(.malformedInput, "an object of the document ends before byte \(range.upperBound)")
            }
            offset = range.upperBound
            sortedBytes += range.count
        }
    }

    /// A source shared by reference.
    private final class Shared {
        var source: any ByteSource
        init(_ source: some ByteSource) { self.source = source }
    }

    /// A count shared by the copies of a slice.
    private final class Remaining {
        var value: Int
        init(_ value: Int) { self.value = value }
    }

    /// At most `remaining` bytes of `base`, from where it stands.
    private struct Slice: ByteSource {
        let base: Shared
        let remaining: Remaining

        init(base: Shared, remaining: Int) {
            self.base = base
            self.remaining = Remaining(remaining)
        }

        mutating func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
            guard remaining.value > 0 else { return 0 }
            let count = try base.source.read(
                into: UnsafeMutableRawBufferPointer(rebasing: buffer.prefix(remaining.value)))
            remaining.value -= count
            return count
        }
    }

    // MARK: A tail merged in

    /// An object whose keys are out of order, as a scan found it.
    struct OutOfOrderObject {
        /// Its bytes, from its opening brace or bracket to its closing one.
        var range: Range<Int>
        /// For a top-level node out of order only in a tail of its children: the offset of the comma before the
        /// tail, and the tail's children as an object of their own (its bytes from its first key to the node's
        /// closing brace, that excluded, in braces).
        var tail: (from: Int, bytes: [UInt8])?
    }

    /// Starts handing out `object` with its tail's children, sorted apart, in their places.
    private mutating func beginMerge(_ object: OutOfOrderObject, tail: (from: Int, bytes: [UInt8])) throws {
        switch objects {
        case .fed(let feed): feed.pass()
        case .known: next += 1
        }
        var sortedTail = try TreeSorter.sort(
            MemorySource(tail.bytes), temporaryDirectory: temporaryDirectory, runBytes: 8 << 20)
        var text: [UInt8] = []
        text.reserveCapacity(tail.bytes.count + 64)
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = try chunk.withUnsafeMutableBytes { try sortedTail.read(into: $0) }
            if count == 0 { break }
            text += chunk[..<count]
        }
        merge = try TailMerge(sortedTail: text, from: tail.from, end: object.range.upperBound)
        sortedBytes += object.range.upperBound - tail.from
    }

    /// Hands out the node `merge` merges: its children in order, each after the tail's children that come before
    /// it, then the rest of the tail's, and its closing brace; 0 once the node's children are all out.
    private mutating func read(into buffer: UnsafeMutableRawBufferPointer, merging merge: TailMerge) throws -> Int {
        while true {
            if merge.pendingIndex < merge.pending.count {
                let count = min(buffer.count, merge.pending.count - merge.pendingIndex)
                buffer.copyBytes(from: merge.pending[merge.pendingIndex..<(merge.pendingIndex + count)])
                merge.pendingIndex += count
                return count
            }
            if merge.isFinished { return 0 }
            if merge.stagedStart < merge.stagedEnd {
                switch try merge.pass(into: buffer) {
                case .bytes(let count): return count
                case .keyDecided: continue
                case .keyCut: break
                }
            }
            // More of the node's children in order (a key cut at the staging's end is kept whole first).
            merge.compact()
            let room = UnsafeMutableRawBufferPointer(
                start: merge.staging + merge.stagedEnd, count: TailMerge.stagingCapacity - merge.stagedEnd)
            guard case .bytes(let count) = try produce(into: room, upTo: merge.tailFrom) else {
                preconditionFailure("a tail inside a top-level node")
            }
            if count > 0 {
                merge.stagedEnd += count
                continue
            }
            guard merge.stagedStart == merge.stagedEnd else {
                throw TreeError(.malformedInput, "a key at byte \(merge.tailFrom) is not closed")
            }
            // The children in order are out: the tail's left, then past the tail's own bytes to the node's brace.
            merge.appendRestOfTail()
            var skipped = merge.tailFrom
            while skipped < merge.end - 1 {
                let count = try base.source.read(
                    into: UnsafeMutableRawBufferPointer(
                        start: merge.staging, count: min(TailMerge.stagingCapacity, merge.end - 1 - skipped)))
                guard count > 0 else { throw TreeError(.unreadable, "the document ended before byte \(merge.end)") }
                skipped += count
            }
            offset = merge.end - 1
            merge.isFinished = true
        }
    }

    /// Whether key `a` comes before key `b` in the order a comparison reads (`.priority`, `.value`, then RTDB
    /// order).
    static func precedes(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Bool {
        let (rankA, rankB) = (rank(a), rank(b))
        return rankA != rankB ? rankA < rankB : (rankA < 2 ? false : FirebaseKey.compare(a, b) < 0)
    }

    /// A top-level node handed out with the children of its tail put in their places: the node's own bytes up to
    /// the tail pass through a staging buffer, where a walk at the node's first level finds each child's key
    /// before it is handed out, and the tail's children that come before it are handed out first.
    private final class TailMerge {
        static let stagingCapacity = 1 << 16
        /// The offset of the comma before the tail, and the offset after the node's closing brace.
        let tailFrom: Int, end: Int
        /// The tail, sorted, and its children: each one's key and its bytes (key, colon and value) in it.
        private let sortedTail: [UInt8]
        private var children: [(key: [UInt8], child: Range<Int>)] = []
        private var nextChild = 0
        /// Bytes to hand out before the staging's.
        var pending: [UInt8] = []
        var pendingIndex = 0
        /// The node's bytes read but not handed out: `staging[stagedStart..<stagedEnd]`.
        let staging = UnsafeMutablePointer<UInt8>.allocate(capacity: TailMerge.stagingCapacity)
        var stagedStart = 0, stagedEnd = 0
        /// Whether the tail's children are all out and the reading is past its bytes.
        var isFinished = false
        // The walk: nesting inside the node (1 among its children), in a string, after a backslash, before a key.
        private var depth = 0
        private var isInString = false
        private var isEscaped = false
        private var expectsKey = false
        /// Whether the key at `stagedStart` has had the tail's children before it handed out.
        private var isKeyDecided = false

        init(sortedTail: [UInt8], from tailFrom: Int, end: Int) throws {
            self.sortedTail = sortedTail
            self.tailFrom = tailFrom
            self.end = end
            var reader = JSONReader(source: MemorySource(sortedTail))
            guard try reader.next() == .objectStart else { throw TreeError(.malformedInput, "a tail is not an object") }
            while try reader.next() == .key {
                let keyStart = reader.tokenStart
                let key = Array(reader.text)
                try reader.skipValue()
                var childEnd = reader.bytesRead
                while childEnd > keyStart, JSONReader.isWhitespace(sortedTail[childEnd - 1]) { childEnd -= 1 }
                children.append((key, keyStart..<childEnd))
            }
        }

        deinit { staging.deallocate() }

        /// What `pass` did.
        enum Passed {
            /// Bytes handed out.
            case bytes(Int)
            /// The tail's children before the key at the staging's start are pending.
            case keyDecided
            /// The key at the staging's start ends past it.
            case keyCut
        }

        /// Hands out staged bytes up to the next key of the node's own children, or decides that key.
        func pass(into buffer: UnsafeMutableRawBufferPointer) throws -> Passed {
            guard let output = buffer.baseAddress else { return .bytes(0) }
            var at = stagedStart
            let stop = min(stagedEnd, stagedStart + buffer.count)
            walk: while at < stop {
                let byte = staging[at]
                if isInString {
                    if isEscaped {
                        isEscaped = false
                    } else if byte == UInt8(ascii: "\\") {
                        isEscaped = true
                    } else if byte == UInt8(ascii: "\"") {
                        isInString = false
                    }
                    at += 1
                    continue
                }
                switch byte {
                case UInt8(ascii: "{"), UInt8(ascii: "["):
                    depth += 1
                    if depth == 1 { expectsKey = true }
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    depth -= 1
                case UInt8(ascii: ","):
                    if depth == 1 { expectsKey = true }
                case UInt8(ascii: "\""):
                    if depth == 1, expectsKey {
                        // A child's key: what comes before it goes out first, then the tail's children before it.
                        guard isKeyDecided else {
                            if at > stagedStart { break walk }
                            return try decideKey()
                        }
                        expectsKey = false
                        isKeyDecided = false
                    }
                    isInString = true
                default:
                    break
                }
                at += 1
            }
            let count = at - stagedStart
            output.copyMemory(from: staging + stagedStart, byteCount: count)
            stagedStart = at
            return .bytes(count)
        }

        /// Puts in `pending` the tail's children before the key whose opening quote is at `stagedStart`.
        private func decideKey() throws -> Passed {
            let start = staging + stagedStart + 1
            guard let close = memchr(start, 0x22, stagedEnd - stagedStart - 1) else { return .keyCut }
            let key = UnsafeBufferPointer(start: start, count: UnsafeRawPointer(start).distance(to: close))
            pending.removeAll(keepingCapacity: true)
            pendingIndex = 0
            while nextChild < children.count {
                let child = children[nextChild]
                let isBefore = child.key.withUnsafeBufferPointer { PartlySortedSource.precedes($0, key) }
                if !isBefore {
                    // A key in both is not the node a comparison reads (the last of repeated keys wins).
                    guard child.key.withUnsafeBufferPointer({ PartlySortedSource.precedes(key, $0) }) else {
                        throw ScanGaveUp(
                            reason: "a key in a node's appended tail is also among its keys in order",
                            isUnsettled: false)
                    }
                    break
                }
                pending += sortedTail[child.child]
                pending.append(UInt8(ascii: ","))
                nextChild += 1
            }
            isKeyDecided = true
            return .keyDecided
        }

        /// Puts in `pending` the tail's children not yet handed out, each after a comma.
        func appendRestOfTail() {
            pending.removeAll(keepingCapacity: true)
            pendingIndex = 0
            while nextChild < children.count {
                pending.append(UInt8(ascii: ","))
                pending += sortedTail[children[nextChild].child]
                nextChild += 1
            }
        }

        /// Moves the staged bytes to the staging's start.
        func compact() {
            guard stagedStart > 0 else { return }
            staging.update(from: staging + stagedStart, count: stagedEnd - stagedStart)
            stagedEnd -= stagedStart
            stagedStart = 0
        }
    }

    // MARK: Finding the objects

    /// The byte ranges of the objects of a document whose keys are not in the order a comparison reads
    /// (`.priority`, then `.value`, then RTDB order, no key twice), the outermost of them, in order; nil when
    /// sorting them one by one would not pay (more than `maximumObjects` of them, or more than `maximumShare` of
    /// the document's bytes: the whole document is sorted then). Malformed JSON throws, as a comparison would.
    /// What it holds is a key a level (at most 33 levels) and the ranges.
    public static func outOfOrderObjects(
        in source: some ByteSource, maximumObjects: Int = 100_000, maximumShare: Double = 0.5
    ) throws -> [Range<Int>]? {
        var reader = JSONReader(source: source)
        var levels: [ScanLevel] = []
        var ranges: [Range<Int>] = []
        var outOfOrderBytes = 0
        while true {
            switch try reader.next() {
            case .objectStart, .arrayStart:
                levels.append(ScanLevel(start: reader.tokenStart))
            case .key:
                let key = reader.text
                let index = levels.count - 1
                if levels[index].hasPrevious, !levels[index].isOutOfOrder {
                    let isAfter = levels[index].previous.withUnsafeBufferPointer { precedes($0, key) }
                    if !isAfter { levels[index].isOutOfOrder = true }
                }
                levels[index].previous.removeAll(keepingCapacity: true)
                levels[index].previous.append(contentsOf: key)
                levels[index].hasPrevious = true
            case .objectEnd, .arrayEnd:
                let level = levels.removeLast()
                guard level.isOutOfOrder else { continue }
                let range = level.start..<(reader.tokenStart + 1)
                // Those inside it are sorted with it.
                while let last = ranges.last, last.lowerBound >= range.lowerBound {
                    outOfOrderBytes -= last.count
                    ranges.removeLast()
                }
                ranges.append(range)
                outOfOrderBytes += range.count
                if ranges.count > maximumObjects { return nil }
            case .end:
                return Double(outOfOrderBytes) > maximumShare * Double(reader.bytesRead) ? nil : ranges
            default:
                continue
            }
        }
    }

    /// An object or array open in `outOfOrderObjects`: where it starts, its last key, and whether its keys left
    /// order.
    private struct ScanLevel {
        var start: Int
        var previous: [UInt8] = []
        var hasPrevious = false
        var isOutOfOrder = false
    }

    /// A key's place before the others: `.priority` first, `.value` second, then any other key.
    static func rank(_ key: UnsafeBufferPointer<UInt8>) -> Int {
        if FirebaseKey.same(FirebaseKey.priority, key) { return 0 }
        if FirebaseKey.same(FirebaseKey.value, key) { return 1 }
        return 2
    }
}
