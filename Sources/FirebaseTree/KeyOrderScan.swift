import Foundation

extension PartlySortedSource {
    /// `outOfOrderObjects(in:)` of the source `open` gives, read as bytes rather than tokens where the document
    /// allows it: brackets, keys and the strings between them are found with `memchr` and compared as they are
    /// written, at several times the speed of reading every token. At anything the byte scan does not settle (a
    /// key with an escape, brackets that do not match, a document that ends early) it gives up and the token scan
    /// reads a fresh source from the start, so the ranges are the token scan's. What neither scan checks (a
    /// malformed number or literal, a control character in a string) the reading that follows refuses.
    public static func outOfOrderObjects(
        opening open: () throws -> any ByteSource, maximumObjects: Int = 100_000, maximumShare: Double = 0.5
    ) throws -> [Range<Int>]? {
        let scan = KeyOrderScan(source: try open(), maximumObjects: maximumObjects)
        switch try scan.run() {
        case .found(let objects, let outOfOrderBytes, let totalBytes):
            return Double(outOfOrderBytes) > maximumShare * Double(totalBytes) ? nil : objects.map(\.range)
        case .tooMany, .rootOutOfOrder:
            return nil
        case .unsettled:
            return try outOfOrderObjects(in: try open(), maximumObjects: maximumObjects, maximumShare: maximumShare)
        }
    }
}

/// The byte scan behind `PartlySortedSource.outOfOrderObjects(opening:)`: eight bytes at a time to the next byte
/// that matters outside strings (a quote, a bracket, a comma or a colon), `memchr` to a string's end.
final class KeyOrderScan {
    enum Outcome {
        /// The outermost out-of-order objects, their bytes, and the document's.
        case found([PartlySortedSource.OutOfOrderObject], outOfOrderBytes: Int, totalBytes: Int)
        /// More than `maximumObjects` of them.
        case tooMany
        /// Something the byte scan leaves to the token scan.
        case unsettled
        /// The document's own keys are out of order (only with `onTopLevelEnd`): the whole document is one object
        /// to sort.
        case rootOutOfOrder
    }

    /// Called each time a child of the document's root ends, with the outermost out-of-order objects found so far
    /// and the offset after that child: those ranges are final unless the root's own keys leave order (the scan
    /// then ends at once with `rootOutOfOrder`). What a scan running ahead of a reader hands it (`Feed`).
    var onTopLevelEnd: ((_ objects: [PartlySortedSource.OutOfOrderObject], _ settled: Int) throws -> Void)?
    /// When set, a child of the root whose children leave order only after some that are in order (a script that
    /// appended keys) is found with its tail: the tail's bytes are kept (`OutOfOrderObject.tail`) and the objects
    /// inside the tail dropped, rather than the whole node found as one object to sort; at most this many bytes of
    /// tails in all (a reader may be far behind the scan), past which nodes are found whole again.
    var tailLimit: Int?
    /// The most children a tail kept may have (each is indexed apart when it is merged).
    static let tailChildLimit = 100_000

    private var source: any ByteSource
    private let maximumObjects: Int
    private static let capacity = 1 << 20
    private let buffer = UnsafeMutablePointer<UInt8>.allocate(capacity: KeyOrderScan.capacity)
    private var count = 0
    private var index = 0
    /// Bytes of the document before `buffer[0]`.
    private var discarded = 0
    private var isAtEnd = false
    /// The last byte outside strings that was not whitespace (a key's quote follows `{` or `,`).
    private var lastSignificant: UInt8 = 0

    /// An object or array open: where it starts, its last key, and whether its keys left order.
    private struct Level {
        var start: Int
        var isObject: Bool
        var previous: [UInt8] = []
        var hasPrevious = false
        var isOutOfOrder = false
        /// The offset of its last comma.
        var lastComma = 0
        /// The offset of the comma before its first key out of order.
        var tailFrom = 0
    }

    /// The tail of a top-level node being kept (see `tailLimit`): its bytes so far (after a brace, as the object
    /// of its children), and the index in `buffer` from which the next are.
    private var tail: [UInt8]?
    private var tailIndex = 0
    private var tailChildren = 0
    /// Bytes of the tails found so far.
    private var keptTailBytes = 0

    init(source: any ByteSource, maximumObjects: Int) {
        self.source = source
        self.maximumObjects = maximumObjects
    }

    deinit { buffer.deallocate() }

    private func refill() throws -> Bool {
        guard !isAtEnd else { return false }
        keepTail(upTo: count)
        tailIndex = 0
        discarded += count
        index = 0
        count = try source.read(into: UnsafeMutableRawBufferPointer(start: buffer, count: Self.capacity))
        if count == 0 { isAtEnd = true }
        return count > 0
    }

    /// The first byte from `index` on that matters outside strings (a quote, a bracket, a comma or a colon), or
    /// `count`.
    @inline(__always)
    private func nextStructural() -> Int {
        var at = index
        while at + 8 <= count {
            let word = UInt64(littleEndian: UnsafeRawPointer(buffer + at).loadUnaligned(as: UInt64.self))
            let found =
                JSONReader.quotesOrBrackets(in: word) | JSONReader.bytes(of: word, equalTo: JSONReader.ones &* 0x2C)
                | JSONReader.bytes(of: word, equalTo: JSONReader.ones &* 0x3A)
            if found != 0 { return at + found.trailingZeroBitCount >> 3 }
            at += 8
        }
        while at < count {
            switch buffer[at] {
            case 0x22, 0x7B, 0x5B, 0x7D, 0x5D, 0x2C, 0x3A: return at
            default: at += 1
            }
        }
        return count
    }

    /// Whether bytes `range` hold anything but whitespace, noting the last such byte.
    @inline(__always)
    private func noteScalars(_ range: Range<Int>) -> Bool {
        var found = false
        for at in range.reversed() {
            let byte = buffer[at]
            if byte != 0x20, byte != 0x0A, byte != 0x0D, byte != 0x09 {
                if !found { lastSignificant = byte }
                found = true
                break
            }
        }
        return found
    }

    /// Moves past the rest of a string whose opening quote was read; appends its bytes to `key` when given.
    /// False for a key with an escape (compared unescaped, which the token scan does), a key longer than the
    /// reader keeps (so that what is held stays bounded), or a document that ends.
    private func skipString(into key: inout [UInt8]?) throws -> Bool {
        while true {
            if index == count {
                guard try refill() else { return false }
            }
            let start = buffer + index
            let remaining = count - index
            let quote = memchr(start, 0x22, remaining).map { UnsafeRawPointer(start).distance(to: $0) }
            let backslash = memchr(start, 0x5C, quote ?? remaining).map { UnsafeRawPointer(start).distance(to: $0) }
            if let backslash {
                // In a key, leave it to the token scan; in a value, skip it and the byte it escapes.
                guard key == nil else { return false }
                index += backslash + 1
                if index == count {
                    guard try refill() else { return false }
                }
                index += 1
                continue
            }
            guard let quote else {
                key?.append(contentsOf: UnsafeBufferPointer(start: start, count: remaining))
                index = count
                // A key longer than the reader keeps goes to the token scan, which holds its first bytes only.
                if let key, key.count > JSONReader.maximumKeyBytes { return false }
                continue
            }
            key?.append(contentsOf: UnsafeBufferPointer(start: start, count: quote))
            index += quote + 1
            return true
        }
    }

    /// Adds the buffer's bytes from `tailIndex` to `end` to the tail being kept; past `tailLimit` the tail is
    /// dropped, and its node found whole.
    private func keepTail(upTo end: Int) {
        guard tail != nil, let tailLimit else { return }
        tail?.append(contentsOf: UnsafeBufferPointer(start: buffer + tailIndex, count: end - tailIndex))
        tailIndex = end
        if let kept = tail?.count, keptTailBytes + kept > tailLimit { tail = nil }
    }

    /// Scans the document.
    func run() throws -> Outcome {
        var levels: [Level] = []
        var ranges: [PartlySortedSource.OutOfOrderObject] = []
        var outOfOrderBytes = 0
        var hasRoot = false
        /// Where in `ranges` the top-level node just closed lies when it has a tail.
        var tailed: Int?
        while true {
            if index == count {
                guard try refill() else { break }
            }
            let at = nextStructural()
            if noteScalars(index..<at), levels.isEmpty {
                // A scalar document, a byte-order mark, or bytes after the root: the token scan says what.
                return .unsettled
            }
            index = at
            guard at < count else { continue }
            let byte = buffer[at]
            let offset = discarded + at
            index = at + 1
            let before = lastSignificant
            lastSignificant = byte
            switch byte {
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                // A second document, or nesting the reader refuses: the token scan says so.
                guard !levels.isEmpty || !hasRoot, levels.count < JSONReader.maximumNesting else { return .unsettled }
                hasRoot = true
                levels.append(Level(start: offset, isObject: byte == UInt8(ascii: "{")))
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                guard let level = levels.popLast(), level.isObject == (byte == UInt8(ascii: "}")) else {
                    return .unsettled
                }
                if level.isOutOfOrder {
                    var object = PartlySortedSource.OutOfOrderObject(range: level.start..<(offset + 1))
                    if levels.count == 1, tail != nil {
                        keepTail(upTo: at)
                        tail?.append(0x7D)
                        if let kept = tail {
                            object.tail = (level.tailFrom, kept)
                            keptTailBytes += kept.count
                        }
                        tail = nil
                    }
                    // Those inside it are sorted with it (those inside its tail, with its tail).
                    let from = object.tail?.from ?? object.range.lowerBound
                    while let last = ranges.last, last.range.lowerBound >= from {
                        outOfOrderBytes -= last.range.count
                        ranges.removeLast()
                    }
                    // Before those inside its part in order, which the reader meets after its start.
                    var place = ranges.endIndex
                    while place > 0, ranges[place - 1].range.lowerBound > object.range.lowerBound { place -= 1 }
                    ranges.insert(object, at: place)
                    if object.tail != nil { tailed = place }
                    outOfOrderBytes += object.range.upperBound - from
                    if ranges.count > maximumObjects { return .tooMany }
                }
                if levels.count == 1, let onTopLevelEnd {
                    try onTopLevelEnd(ranges, offset + 1)
                    // Handed over: the scan keeps no copy of the node's tail.
                    if let handed = tailed { ranges[handed].tail = nil }
                    tailed = nil
                }
            case UInt8(ascii: ","):
                guard let top = levels.indices.last else { continue }
                levels[top].lastComma = offset
                if top == 1, tail != nil {
                    tailChildren += 1
                    if tailChildren >= Self.tailChildLimit { tail = nil }
                }
            case UInt8(ascii: "\""):
                guard let top = levels.indices.last else { return .unsettled }
                let isKey = levels[top].isObject && (before == UInt8(ascii: "{") || before == UInt8(ascii: ","))
                guard isKey else {
                    var none: [UInt8]?
                    guard try skipString(into: &none) else { return .unsettled }
                    continue
                }
                let wasOutOfOrder = levels[top].isOutOfOrder
                // The key, when it was read across buffers (a tail starting with it cannot start in this one).
                var keyRead: [UInt8]?
                // Most keys end in the buffer, without an escape: compared where they lie.
                let start = buffer + index
                if let end = memchr(start, 0x22, count - index).map({ UnsafeRawPointer(start).distance(to: $0) }),
                    memchr(start, 0x5C, end) == nil
                {
                    // A key longer than the reader keeps is compared by its first bytes there.
                    guard end <= JSONReader.maximumKeyBytes else { return .unsettled }
                    note(UnsafeBufferPointer(start: start, count: end), in: &levels[top])
                    index += end + 1
                } else {
                    var key: [UInt8]? = []
                    guard try skipString(into: &key), let key, key.count <= JSONReader.maximumKeyBytes else {
                        return .unsettled
                    }
                    key.withUnsafeBufferPointer { note($0, in: &levels[top]) }
                    keyRead = key
                }
                if top == 1, !wasOutOfOrder, levels[1].isOutOfOrder, tailLimit != nil {
                    // From the key's quote in the buffer, or after the key as read when it began in an earlier one.
                    tail = keyRead.map { [0x7B, 0x22] + $0 + [0x22] } ?? [0x7B]
                    tailIndex = keyRead == nil ? at : index
                    tailChildren = 0
                    levels[1].tailFrom = levels[1].lastComma
                }
                if top == 0, levels[0].isOutOfOrder, onTopLevelEnd != nil { return .rootOutOfOrder }
            default:
                continue
            }
        }
        guard levels.isEmpty, hasRoot else { return .unsettled }
        return .found(ranges, outOfOrderBytes: outOfOrderBytes, totalBytes: discarded)
    }

    /// Compares `key` with the level's previous key as the token scan does, and keeps it (in the level's bytes,
    /// reused from key to key).
    private func note(_ key: UnsafeBufferPointer<UInt8>, in level: inout Level) {
        if level.hasPrevious, !level.isOutOfOrder {
            let isAfter = level.previous.withUnsafeBufferPointer { PartlySortedSource.precedes($0, key) }
            if !isAfter { level.isOutOfOrder = true }
        }
        level.previous.removeAll(keepingCapacity: true)
        level.previous.append(contentsOf: key)
        level.hasPrevious = true
    }
}
