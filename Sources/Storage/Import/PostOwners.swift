import Foundation
internal import PostgresClient

/// The owner of each post an import loaded, by post key, held in the console: the likes read after the posts are
/// then sent with their owners by one COPY (`TreeImporter.likeOwners`), where staging them and joining with the
/// posts cost the server three to four times the COPY (BENCHMARKS-LOG.md, issue 42).
///
/// Kept in a few flat arrays (keys' and owners' bytes, an entry per post, an open-addressing table), about 60
/// bytes a post; a store whose posts would take more than a budget, or that has a post key with several owners
/// (a like then has a row per owner), is left to the join.
struct PostOwners {
    private struct Entry {
        var keyStart: Int32
        var keyCount: Int32
        var owner: Int32
    }

    /// Every key's bytes, one after the other.
    private var keyBytes: [UInt8] = []
    /// Every owner's bytes, each once per run of posts with the same owner (they come grouped, as loaded).
    private var ownerBytes: [UInt8] = []
    /// Where each owner ends in `ownerBytes`.
    private var ownerEnds: [Int32] = [0]
    private var entries: [Entry] = []
    /// Indexes in `entries`, or -1; a power of two long, at most half full.
    private var slots: [Int32] = []

    /// The bytes the map takes, its arrays' capacities counted.
    var memoryBytes: Int {
        keyBytes.capacity + ownerBytes.capacity + 4 * ownerEnds.capacity
            + MemoryLayout<Entry>.stride * entries.capacity + 4 * slots.capacity
    }

    /// Reads the key and owner of every row of `posts` (unqualified: the twin the import filled, by its session's
    /// search path), which holds at most `count` rows; nil when they would take more than `budget` bytes or a key
    /// has several owners.
    static func read(on connection: StoreConnection, count: Int, budget: Int) throws -> PostOwners? {
        var owners = PostOwners()
        // Room for all at once (a push ID has 20 bytes), rather than arrays doubling past what they need.
        guard count * (MemoryLayout<Entry>.stride + 20) + 4 * slotCount(for: count) <= budget else { return nil }
        owners.entries.reserveCapacity(count)
        owners.keyBytes.reserveCapacity(count * 20)
        var row = CopyRow()
        var isOver = false
        _ = try connection.copyOut("COPY posts (post_key, owner_uid) TO STDOUT") { line in
            guard !isOver else { return }
            row.read(line)
            row.withText(0) { key in row.withText(1) { owner in owners.append(key: key, owner: owner) } }
            isOver = owners.memoryBytes > budget
        }
        guard !isOver, owners.makeSlots(budget: budget) else { return nil }
        return owners
    }

    private mutating func append(key: UnsafeBufferPointer<UInt8>?, owner: UnsafeBufferPointer<UInt8>?) {
        // The schema makes both NOT NULL.
        guard let key, let owner else { return }
        let owners = ownerEnds.count - 1
        let isLastOwner =
            owners > 0
            && ownerBytes.withUnsafeBufferPointer { bytes in
                UnsafeBufferPointer(rebasing: bytes[Int(ownerEnds[owners - 1])...]).elementsEqual(owner)
            }
        if !isLastOwner {
            ownerBytes.append(contentsOf: owner)
            ownerEnds.append(Int32(ownerBytes.count))
        }
        entries.append(
            Entry(keyStart: Int32(keyBytes.count), keyCount: Int32(key.count), owner: Int32(ownerEnds.count - 2)))
        keyBytes.append(contentsOf: key)
    }

    /// Fills the table; false when it would pass `budget` or two entries have one key.
    private mutating func makeSlots(budget: Int) -> Bool {
        let size = Self.slotCount(for: entries.count)
        guard memoryBytes + 4 * size <= budget else { return false }
        slots = Array(repeating: -1, count: size)
        for index in entries.indices {
            let found = keyBytes.withUnsafeBufferPointer { keys in
                let entry = entries[index]
                return slot(
                    of: UnsafeBufferPointer(rebasing: keys[Int(entry.keyStart)..<Int(entry.keyStart + entry.keyCount)]))
            }
            guard slots[found.slot] < 0 else { return false }
            slots[found.slot] = Int32(index)
        }
        return true
    }

    /// The table's length for `count` entries: a power of two, at most half full.
    private static func slotCount(for count: Int) -> Int {
        var size = 16
        while size < 2 * count { size *= 2 }
        return size
    }

    /// The slot that holds `key`, or the empty one where it would go.
    private func slot(of key: UnsafeBufferPointer<UInt8>) -> (slot: Int, entry: Entry?) {
        // FNV-1a: keys are short, and push IDs differ in their last bytes.
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in key { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        let mask = slots.count - 1
        var slot = Int(truncatingIfNeeded: hash ^ (hash >> 29)) & mask
        while case let index = slots[slot], index >= 0 {
            let entry = entries[Int(index)]
            let isKey =
                entry.keyCount == key.count
                && keyBytes.withUnsafeBufferPointer { keys in
                    guard let base = keys.baseAddress, let other = key.baseAddress else { return key.isEmpty }
                    return memcmp(base + Int(entry.keyStart), other, key.count) == 0
                }
            if isKey { return (slot, entry) }
            slot = (slot + 1) & mask
        }
        return (slot, nil)
    }

    /// Calls `body` with the bytes of the owner of the post `key`, or empty ones when no post has it (the like
    /// is kept under the owner '' until one does).
    func withOwner<R>(ofPostKey key: UnsafeBufferPointer<UInt8>, _ body: (UnsafeBufferPointer<UInt8>) throws -> R)
        rethrows -> R
    {
        guard let entry = slot(of: key).entry else { return try body(UnsafeBufferPointer(start: nil, count: 0)) }
        return try ownerBytes.withUnsafeBufferPointer { owners in
            try body(
                UnsafeBufferPointer(
                    rebasing: owners[Int(ownerEnds[Int(entry.owner)])..<Int(ownerEnds[Int(entry.owner) + 1])]))
        }
    }
}
