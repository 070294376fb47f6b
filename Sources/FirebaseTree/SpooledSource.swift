/// A source that can be read again from its start although its base cannot (stdin, a pipe): every byte read
/// is also kept in a temporary file, and `replay()` reads the whole document again from there.
public final class SpooledSource: ByteSource {
    private var base: any ByteSource
    private let copy: TemporaryFile

    /// A source over `base` that keeps a copy of what it reads in `directory`.
    public init(_ base: some ByteSource, temporaryDirectory directory: String = TreeSorter.defaultTemporaryDirectory)
        throws
    {
        self.base = base
        copy = try TemporaryFile(in: directory)
    }

    /// Reads from the base and keeps a copy.
    public func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        let count = try base.read(into: buffer)
        if count > 0 { try copy.append(UnsafeRawBufferPointer(rebasing: buffer.prefix(count))) }
        return count
    }

    /// The whole document from its first byte, as a source of its own that others may read meanwhile: the rest of
    /// the base is kept in the copy first, and each replay reads the copy at its own offset.
    public func replay() throws -> any ByteSource {
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 1)
        defer { chunk.deallocate() }
        while true {
            let count = try base.read(into: chunk)
            guard count > 0 else { break }
            try copy.append(UnsafeRawBufferPointer(rebasing: chunk.prefix(count)))
        }
        try copy.flush()
        return Replay(copy: copy)
    }

    /// A reading of the copy from its first byte.
    private struct Replay: ByteSource {
        let copy: TemporaryFile
        var offset = 0

        mutating func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
            let count = try copy.read(at: offset, into: buffer)
            offset += count
            return count
        }
    }
}
