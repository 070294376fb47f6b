/// The path of the node the importer reads, as its keys' bytes in one buffer: going down a level costs a copy of
/// the key, not a String. Keys become Strings only when something asks for them (a reject, an unmapped value, a
/// finding), and those stay made while their keys stay on the path.
struct ImportPath {
    private var bytes = GrowingBytes()
    /// Where each level's key ends in `bytes`.
    private var ends: [Int] = []
    /// The keys of the first levels, as Strings, made when asked for.
    private var strings: [String] = []

    /// Its levels (0 at the root).
    var count: Int { ends.count }
    /// Whether it is the root's.
    var isEmpty: Bool { ends.isEmpty }
    /// Its length as Firebase limits it: every key's bytes and the '/' before each.
    var byteCount: Int { bytes.count + ends.count }

    /// Goes down to the child `key`.
    mutating func append(_ key: UnsafeBufferPointer<UInt8>) {
        bytes.append(key)
        ends.append(bytes.count)
    }

    /// Goes up a level.
    mutating func removeLast() {
        ends.removeLast()
        bytes.removeAll(after: ends.last ?? 0)
        if strings.count > ends.count { strings.removeLast() }
    }

    /// Calls `body` with the bytes of the key at `level` (0: a top-level node's).
    func withKey<R>(_ level: Int, _ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        try bytes.withBytes(in: (level == 0 ? 0 : ends[level - 1])..<ends[level], body)
    }

    /// Calls `body` with the bytes of each key from `level` down (one access to the storage for them all).
    func forEachKey(from level: Int, _ body: (UnsafeBufferPointer<UInt8>) throws -> Void) rethrows {
        try bytes.withBytes { bytes in
            for index in level..<ends.count {
                try body(UnsafeBufferPointer(rebasing: bytes[(index == 0 ? 0 : ends[index - 1])..<ends[index]]))
            }
        }
    }

    /// The key at `level`.
    func key(_ level: Int) -> String {
        level < strings.count ? strings[level] : withKey(level) { String(decoding: $0, as: UTF8.self) }
    }

    /// The last key.
    var lastKey: String { key(ends.count - 1) }

    /// Its keys.
    mutating func keys() -> [String] {
        while strings.count < ends.count { strings.append(key(strings.count)) }
        return strings
    }
}
