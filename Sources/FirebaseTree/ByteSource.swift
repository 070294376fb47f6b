import Foundation

/// Where a streaming reader gets its bytes: a file, a pipe, memory. Reads fill as much of the buffer as they
/// can and return 0 at the end of the input.
public protocol ByteSource {
    /// Reads up to `buffer.count` bytes into `buffer`; returns how many, 0 at the end.
    mutating func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int

    /// Moves past up to `count` bytes without handing them over; returns how many, 0 at the end.
    mutating func skip(_ count: Int) throws -> Int

    /// Whether `skip` moves on without reading what it skips (a regular file seeks); false where it has to read
    /// and drop the bytes (a pipe, a decompressed stream), which costs what reading them does.
    var skipsWithoutReading: Bool { get }
}

extension ByteSource {
    /// False: reading and dropping the bytes, as the default `skip` does.
    public var skipsWithoutReading: Bool { false }

    /// Reads the bytes and drops them.
    public mutating func skip(_ count: Int) throws -> Int {
        try skipByReading(count)
    }

    /// Skips `count` bytes by reading them and dropping them: what `skip` does for a source with no faster way.
    public mutating func skipByReading(_ count: Int) throws -> Int {
        let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: min(max(count, 1), 1 << 16), alignment: 1)
        defer { scratch.deallocate() }
        var skipped = 0
        while skipped < count {
            let read = try read(
                into: UnsafeMutableRawBufferPointer(rebasing: scratch[..<min(scratch.count, count - skipped)]))
            guard read > 0 else { break }
            skipped += read
        }
        return skipped
    }
}

/// Bytes from a file descriptor (a file, stdin, a pipe), read without buffering of its own.
public struct FileDescriptorSource: ByteSource {
    /// The descriptor read from; not closed by this source.
    public let descriptor: Int32
    /// A name for error messages (the file's path, or `-` for stdin).
    public let name: String

    /// Reads from `descriptor`.
    public init(descriptor: Int32, name: String) {
        self.descriptor = descriptor
        self.name = name
    }

    /// Reads once, retrying on EINTR.
    public mutating func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        while true {
            let count = Foundation.read(descriptor, buffer.baseAddress, buffer.count)
            if count >= 0 { return count }
            if errno == EINTR { continue }
            throw TreeError(.unreadable, "cannot read \(name): \(String(cString: strerror(errno)))")
        }
    }

    /// Whether the descriptor is a regular file, which `skip` seeks in.
    public var skipsWithoutReading: Bool {
        var info = stat()
        return fstat(descriptor, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG
    }

    /// Seeks past the bytes when the descriptor is a regular file (up to its end), and reads them otherwise.
    public mutating func skip(_ count: Int) throws -> Int {
        var info = stat()
        let position = lseek(descriptor, 0, SEEK_CUR)
        guard fstat(descriptor, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, position >= 0 else {
            return try skipByReading(count)
        }
        let skipped = max(0, min(count, Int(info.st_size) - Int(position)))
        guard lseek(descriptor, off_t(skipped), SEEK_CUR) >= 0 else {
            throw TreeError(.unreadable, "cannot read \(name): \(String(cString: strerror(errno)))")
        }
        return skipped
    }
}

/// Bytes held in memory (tests, small documents).
public struct MemorySource: ByteSource {
    private let bytes: [UInt8]
    private var offset = 0
    /// At most this many bytes per read, to exercise readers' refills in tests.
    private let chunkSize: Int

    /// A source over `bytes`, handed out at most `chunkSize` bytes at a time.
    public init(_ bytes: [UInt8], chunkSize: Int = .max) {
        self.bytes = bytes
        self.chunkSize = max(1, chunkSize)
    }

    /// A source over a string's UTF-8.
    public init(_ text: String, chunkSize: Int = .max) {
        self.init(Array(text.utf8), chunkSize: chunkSize)
    }

    /// True: skipping moves an offset.
    public var skipsWithoutReading: Bool { true }

    /// Moves the offset past up to `count` bytes.
    public mutating func skip(_ count: Int) throws -> Int {
        let skipped = max(0, min(count, bytes.count - offset))
        offset += skipped
        return skipped
    }

    /// Copies the next bytes.
    public mutating func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        let count = min(buffer.count, bytes.count - offset, chunkSize)
        guard count > 0 else { return 0 }
        bytes.withUnsafeBytes { source in
            UnsafeMutableRawBufferPointer(rebasing: buffer[..<count]).copyMemory(
                from: UnsafeRawBufferPointer(rebasing: source[offset..<offset + count]))
        }
        offset += count
        return count
    }
}
