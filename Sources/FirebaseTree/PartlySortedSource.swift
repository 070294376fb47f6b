import Foundation

/// A document handed out with its out-of-order objects sorted (each by `TreeSorter`, as it is reached) and the rest
/// as it is: what a comparison reads when only some objects of a file are out of RTDB order, as where a script
/// appended new keys, rather than a sorted copy of the whole file. `outOfOrderObjects(in:)` finds the objects.
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
    private mutating func nextRange() throws -> (range: Range<Int>?, limit: Int) {
        switch objects {
        case .fed(let feed):
            return try feed.next(at: offset)
        case .known(let ranges):
            while next < ranges.count, ranges[next].upperBound <= offset { next += 1 }
            return next < ranges.count ? (ranges[next], ranges[next].lowerBound) : (nil, Int.max)
        }
    }

    /// Reads the document as it is up to the next object to sort, then that object sorted, and so on.
    public mutating func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        while true {
            if var current = sorted {
                let count = try current.read(into: buffer)
                sorted = current
                if count > 0 { return count }
                sorted = nil
            }
            let (upcoming, limit) = try nextRange()
            if offset < limit {
                let count = try base.source.read(
                    into: UnsafeMutableRawBufferPointer(rebasing: buffer.prefix(limit - offset)))
                if count == 0, let upcoming {
                    throw TreeError(.unreadable, "the document ended before byte \(upcoming.lowerBound)")
                }
                offset += count
                return count
            }
            guard let range = upcoming else { return 0 }
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
                    let isAfter = levels[index].previous.withUnsafeBufferPointer { previous in
                        let (a, b) = (rank(previous), rank(key))
                        return a != b ? a < b : (a < 2 ? false : FirebaseKey.compare(previous, key) < 0)
                    }
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
