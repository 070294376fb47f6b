/// Bytes written with one copy each, into storage that only grows and is reused: for the keys import and export
/// keep from one key or row to the next (`KeyTracker`, `KeyColumnBytes`), where an array's generic append and
/// removal cost several times the copy.
struct GrowingBytes {
    private var storage: [UInt8] = []
    /// Bytes held.
    private(set) var count = 0

    /// Bytes the storage holds without growing.
    var capacity: Int { storage.count }

    /// Adds `bytes` at the end.
    mutating func append(_ bytes: UnsafeBufferPointer<UInt8>) {
        let end = count + bytes.count
        if end > storage.count {
            storage.append(contentsOf: repeatElement(0, count: max(end - storage.count, storage.count, 64)))
        }
        let start = count
        storage.withUnsafeMutableBufferPointer { storage in
            guard let source = bytes.baseAddress, let target = storage.baseAddress else { return }
            (target + start).update(from: source, count: bytes.count)
        }
        count = end
    }

    /// Holds `bytes` only.
    mutating func replace(with bytes: UnsafeBufferPointer<UInt8>) {
        count = 0
        append(bytes)
    }

    /// Holds nothing, keeping the storage.
    mutating func removeAll() { count = 0 }

    /// Holds its first `count` bytes only, keeping the storage.
    mutating func removeAll(after count: Int) {
        precondition(count <= self.count, "past the bytes held")
        self.count = count
    }

    /// Calls `body` with the bytes held.
    func withBytes<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        try withBytes(in: 0..<count, body)
    }

    /// Calls `body` with the bytes held in `range`.
    func withBytes<R>(in range: Range<Int>, _ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        precondition(range.upperBound <= count, "past the bytes held")
        return try storage.withUnsafeBufferPointer { try body(UnsafeBufferPointer(rebasing: $0[range])) }
    }
}
