import Foundation

/// The path of the node the importer reads, as its keys' bytes in one buffer: going down a level costs a copy of
/// the key, not a String. Keys become Strings only when something asks for them (a reject, an unmapped value, a
/// finding), and those stay made while their keys stay on the path.
///
/// A class over malloc'd memory: the importer consults it for every row, and an array held in a class property
/// was retained and released at each access.
final class ImportPath {
    private var bytes: UnsafeMutablePointer<UInt8>
    private var byteCapacity = 1024
    /// Bytes of the keys on the path.
    private var used = 0
    /// Where each level's key ends in `bytes`; past `count`, the end the last key removed from a level had.
    private var ends: UnsafeMutablePointer<Int>
    private var levelCapacity = 64
    /// The keys of the first levels, as Strings, made when asked for.
    private var strings: [String] = []

    /// Its levels (0 at the root).
    private(set) var count = 0

    /// The root's path.
    init() {
        bytes = Self.allocate(UInt8.self, byteCapacity)
        ends = Self.allocate(Int.self, levelCapacity)
    }

    deinit {
        free(bytes)
        free(ends)
    }

    private static func allocate<T>(_ type: T.Type, _ count: Int, growing old: UnsafeMutablePointer<T>? = nil)
        -> UnsafeMutablePointer<T>
    {
        guard let memory = realloc(old, count * MemoryLayout<T>.stride) else {
            fatalError("out of memory growing an import's path")
        }
        return memory.assumingMemoryBound(to: T.self)
    }

    /// Its length as Firebase limits it: every key's bytes and the '/' before each.
    var byteCount: Int { used + count }

    /// Goes down to the child `key`.
    func append(_ key: UnsafeBufferPointer<UInt8>) {
        if used + key.count > byteCapacity {
            byteCapacity = max(byteCapacity * 2, used + key.count)
            bytes = Self.allocate(UInt8.self, byteCapacity, growing: bytes)
        }
        if count == levelCapacity {
            levelCapacity *= 2
            ends = Self.allocate(Int.self, levelCapacity, growing: ends)
        }
        if let base = key.baseAddress { (bytes + used).update(from: base, count: key.count) }
        used += key.count
        ends[count] = used
        count += 1
    }

    /// Goes up a level. The key removed stays readable (`isKeyJustRemoved`) until another goes to its level.
    func removeLast() {
        precondition(count > 0, "the root has no level to leave")
        count -= 1
        used = count == 0 ? 0 : ends[count - 1]
        if strings.count > count { strings.removeLast() }
    }

    /// Whether the key removed last from the level below the path's end, the child that level held before, is
    /// `key`; only after `removeLast` left that level, and before anything went down to it again.
    func isKeyJustRemoved(_ key: UnsafeBufferPointer<UInt8>) -> Bool {
        precondition(count < levelCapacity, "a level below the path was left")
        guard ends[count] - used == key.count else { return false }
        guard let base = key.baseAddress else { return true }
        return memcmp(bytes + used, base, key.count) == 0
    }

    /// Calls `body` with the bytes of the key at `level` (0: a top-level node's).
    func withKey<R>(_ level: Int, _ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        precondition(level < count, "a level of the path")
        let start = level == 0 ? 0 : ends[level - 1]
        return try body(UnsafeBufferPointer(start: bytes + start, count: ends[level] - start))
    }

    /// Calls `body` with the bytes of each key from `level` down.
    func forEachKey(from level: Int, _ body: (UnsafeBufferPointer<UInt8>) throws -> Void) rethrows {
        for index in level..<count { try withKey(index, body) }
    }

    /// The key at `level`.
    func key(_ level: Int) -> String {
        level < strings.count ? strings[level] : withKey(level) { String(decoding: $0, as: UTF8.self) }
    }

    /// The last key.
    var lastKey: String { key(count - 1) }

    /// Its keys.
    func keys() -> [String] {
        while strings.count < count { strings.append(key(strings.count)) }
        return strings
    }
}
