/// A source read a byte at a time through a buffer of 64 KB, for the small scanners that look at every byte (an
/// `auth:export` CSV file, `TopLevelFilterSource`); the last byte taken can be given back.
package struct ByteCursor {
    private var source: any ByteSource
    private var buffer = [UInt8](repeating: 0, count: 1 << 16)
    private var count = 0
    private var position = 0
    private var isAtEnd = false

    /// A cursor at the start of `source`.
    package init(_ source: any ByteSource) {
        self.source = source
    }

    /// The next byte, nil at the end of the source.
    package mutating func next() throws -> UInt8? {
        if position == count {
            guard !isAtEnd else { return nil }
            count = try buffer.withUnsafeMutableBytes { try source.read(into: $0) }
            position = 0
            if count == 0 {
                isAtEnd = true
                return nil
            }
        }
        defer { position += 1 }
        return buffer[position]
    }

    /// Gives back the byte `next()` returned last (it is still in the buffer, even after a refill).
    package mutating func unread() {
        precondition(position > 0, "a byte was taken")
        position -= 1
    }
}
