import FirebaseTree
import Foundation

/// Tells whether a key was already seen in one object, in memory that does not grow with the object when its
/// keys come sorted, as Firebase writes them (in RTDB order, or in byte order as a JSON library sorts them).
///
/// While the keys ascend, a new key is above every earlier one and cannot repeat any: the first `exactLimit`
/// keys are only kept (their bytes, not hashed), in case the order breaks; then they are hashed and every key from
/// there on too, by its bytes (so that canonically equivalent keys stay distinct). An object still sorted after
/// `exactLimit` keys keeps only its last key: a key above it is new, an equal one a duplicate. Should the order
/// break later, keys from there on are hashed again, and one that the dropped keys might hold is `maybe` (the
/// caller asks the database). A hash collision reports a duplicate that is not one, which costs a warning and a
/// DELETE that finds nothing: no value is lost.
struct KeyTracker {
    enum Answer {
        case new, duplicate, maybe
    }

    /// Keys kept while sorted before they are dropped.
    static let exactLimit = 1 << 16

    private enum Mode {
        /// The keys so far ascend; their bytes are in `keptBytes`, each ending at its `keptEnds` offset.
        case ascending
        /// Every key so far is in `hashes`.
        case hashed
        /// The keys so far ascend and were dropped: a new key must be above the last.
        case sortedRun
        /// The keys ascended up to `end` (in RTDB order, byte order or both), were dropped, then the order broke:
        /// `hashes` holds `end` and the keys since.
        case broken(end: [UInt8], rtdb: Bool, bytes: Bool)
    }

    private var mode = Mode.ascending
    private var keptBytes = GrowingBytes()
    private var keptEnds: [Int] = []
    private var hashes = Fingerprints()
    private var count = 0
    /// The last key, once sorted keys are no longer kept (`sortedRun`).
    private var last = GrowingBytes()
    private var isAscending = (rtdb: true, bytes: true)

    /// Forgets every key, keeping small buffers for the next object (the importer reuses one tracker per depth).
    mutating func reset() {
        mode = .ascending
        count = 0
        isAscending = (true, true)
        if keptBytes.capacity > 1 << 16 { (keptBytes, keptEnds) = (GrowingBytes(), []) }
        keptBytes.removeAll()
        keptEnds.removeAll(keepingCapacity: true)
        if hashes.count > 0 { hashes = Fingerprints() }
    }

    /// Records `key` and tells whether it was seen before.
    mutating func insert(_ key: String) -> Answer {
        // The borrowed string's own bytes: `withUTF8` on a copy retained and released it.
        if let answer = key.utf8.withContiguousStorageIfAvailable({ insert($0) }) { return answer }
        var key = key
        return key.withUTF8 { insert($0) }
    }

    /// Records the key whose bytes are `key` and tells whether it was seen before.
    mutating func insert(_ key: UnsafeBufferPointer<UInt8>) -> Answer {
        count += 1
        switch mode {
        case .hashed: return hashes.insert(Self.hash(key)) ? .new : .duplicate
        case .broken: return insert(broken: key)
        case .ascending, .sortedRun: break
        }
        // Still sorted so far: the key is compared with the one before (the last kept, or `last` once they are
        // dropped).
        let wasAscending = isAscending
        if count > 1 {
            // Read before the closure, which would otherwise capture the tracker (and retain its storage).
            let isRTDBAscending = isAscending.rtdb
            let (order, rtdbOrder) = withPreviousKey { previous in
                isRTDBAscending
                    ? FirebaseKey.compareInBothOrders(previous, key) : (Self.compareBytes(previous, key), 0)
            }
            if order == 0 { return .duplicate }
            isAscending = (isAscending.rtdb && rtdbOrder < 0, isAscending.bytes && order < 0)
        }
        let isSorted = isAscending.rtdb || isAscending.bytes
        if case .sortedRun = mode {
            guard isSorted else {
                // The run ends at the previous key; it is hashed too, as every key from here on is.
                let end = last.withBytes { Array($0) }
                _ = last.withBytes { hashes.insert(Self.hash($0)) }
                mode = .broken(end: end, rtdb: wasAscending.rtdb, bytes: wasAscending.bytes)
                return insert(broken: key)
            }
            last.replace(with: key)
            return .new
        }
        if isSorted {
            guard keptEnds.count < Self.exactLimit else {
                last.replace(with: key)
                (keptBytes, keptEnds) = (GrowingBytes(), [])
                mode = .sortedRun
                return .new
            }
            keptBytes.append(key)
            keptEnds.append(keptBytes.count)
            return .new
        }
        // The order broke: from here on every key is hashed, the kept ones first.
        keptBytes.withBytes { bytes in
            var start = 0
            for end in keptEnds {
                _ = hashes.insert(Self.hash(UnsafeBufferPointer(rebasing: bytes[start..<end])))
                start = end
            }
        }
        (keptBytes, keptEnds) = (GrowingBytes(), [])
        mode = .hashed
        return hashes.insert(Self.hash(key)) ? .new : .duplicate
    }

    /// Calls `body` with the key inserted before, while the keys are sorted: the last kept one, or `last` once
    /// they were dropped.
    private func withPreviousKey<R>(_ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
        guard case .ascending = mode else { return last.withBytes(body) }
        let end = keptEnds[keptEnds.count - 1]
        let start = keptEnds.count > 1 ? keptEnds[keptEnds.count - 2] : 0
        return keptBytes.withBytes { body(UnsafeBufferPointer(rebasing: $0[start..<end])) }
    }

    private mutating func insert(broken key: UnsafeBufferPointer<UInt8>) -> Answer {
        guard case .broken(let end, let rtdb, let bytes) = mode else { preconditionFailure("after the break") }
        if !hashes.insert(Self.hash(key)) { return .duplicate }
        let isAboveDropped = end.withUnsafeBufferPointer { end in
            (rtdb && FirebaseKey.compare(end, key) < 0) || (bytes && Self.compareBytes(end, key) < 0)
        }
        return isAboveDropped ? .new : .maybe
    }

    /// -1, 0 or 1 as `a` sorts before, with or after `b` by bytes (memcmp, not a generic element loop: the
    /// import compares every key with the one before it).
    private static func compareBytes(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Int {
        let shorter = min(a.count, b.count)
        if shorter > 0, let x = a.baseAddress, let y = b.baseAddress {
            let order = memcmp(x, y, shorter)
            if order != 0 { return order < 0 ? -1 : 1 }
        }
        return a.count == b.count ? 0 : a.count < b.count ? -1 : 1
    }

    private static func hash(_ key: UnsafeBufferPointer<UInt8>) -> UInt64 {
        var hasher = Hasher()
        hasher.combine(bytes: UnsafeRawBufferPointer(key))
        return UInt64(bitPattern: Int64(hasher.finalize()))
    }
}
