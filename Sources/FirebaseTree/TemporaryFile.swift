import Foundation

/// Scratch bytes on disk that nothing outlives and nobody else can reach: the file is opened with Linux's
/// `O_TMPFILE` in `directory`, so it has no name (nothing can be planted in its place, opened or linked) and it
/// is gone when closed or when the process dies (a kill -9 leaves nothing behind). Written by appending through a
/// buffer, read back at offsets.
package final class TemporaryFile {
    private let descriptor: Int32
    private let directory: String
    private var pending: [UInt8] = []
    private static let writeBuffer = 1 << 20
    /// Bytes appended so far, flushed or not.
    package private(set) var size = 0
    /// Where the file bypasses the page cache (`bypassingPageCache`), its aligned buffers; nil otherwise.
    private let direct: DirectBuffers?
    /// Whether the file bypasses the page cache (asked for, and the file system allows it).
    package var bypassesPageCache: Bool { direct != nil }

    /// Linux's O_TMPFILE (`__O_TMPFILE | O_DIRECTORY`), which Glibc's Swift module does not export.
    private static let openTemporaryFile: Int32 = 0o20_000_000 | O_DIRECTORY

    /// A new, empty file in `directory`. With `bypassingPageCache`, for bytes written once and read back once in
    /// order (an export's ahead-rendered tables): the file is opened with `O_DIRECT`, so that writing it costs no
    /// page-cache pages (on a virtual machine, allocating them costs more than the disk's bandwidth: 460 MB
    /// written through the cache took 1.9-4.4 CPU-seconds here, directly 0.05), where the file system allows it
    /// (where it does not, tmpfs before Linux 6.6, the cache is used).
    package init(in directory: String = defaultDirectory, bypassingPageCache: Bool = false) throws {
        self.directory = directory
        let flags = Self.openTemporaryFile | O_RDWR | O_CLOEXEC
        if bypassingPageCache, let directFlag = Self.directFlag {
            let directDescriptor = open(directory, flags | directFlag, 0o600)
            if directDescriptor >= 0 {
                descriptor = directDescriptor
                direct = DirectBuffers()
                return
            }
        }
        direct = nil
        descriptor = open(directory, flags, 0o600)
        guard descriptor >= 0 else { throw Self.error("cannot create a temporary file in \(directory)") }
    }

    deinit {
        close(descriptor)
    }

    /// Appends `bytes` at the end of the file.
    package func append(_ bytes: UnsafeRawBufferPointer) throws {
        if let direct { return try appendDirectly(bytes, through: direct) }
        size += bytes.count
        if pending.count + bytes.count > Self.writeBuffer { try flush() }
        if bytes.count >= Self.writeBuffer {
            try write(bytes)
        } else {
            pending.append(contentsOf: bytes)
        }
    }

    /// Writes what `append` buffered; `read` sees only flushed bytes (bypassing the page cache, all of them: the
    /// last partial block stays in memory, where `read` finds it).
    package func flush() throws {
        if direct != nil { return }
        guard !pending.isEmpty else { return }
        try pending.withUnsafeBytes { try write($0) }
        pending.removeAll(keepingCapacity: true)
    }

    /// Reads up to `buffer.count` flushed bytes from `offset`; returns how many (0 at the end).
    package func read(at offset: Int, into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        if let direct { return try readDirectly(at: offset, into: buffer, through: direct) }
        guard let base = buffer.baseAddress else { return 0 }
        var done = 0
        while done < buffer.count {
            let count = pread(descriptor, base + done, buffer.count - done, off_t(offset + done))
            if count == 0 { break }
            if count < 0 {
                if errno == EINTR { continue }
                throw Self.error("cannot read a temporary file in \(directory)")
            }
            done += count
        }
        return done
    }

    private func write(_ bytes: UnsafeRawBufferPointer) throws {
        guard let base = bytes.baseAddress else { return }
        var done = 0
        while done < bytes.count {
            let count = Foundation.write(descriptor, base + done, bytes.count - done)
            if count < 0 {
                if errno == EINTR { continue }
                throw Self.error("cannot write a temporary file in \(directory)")
            }
            done += count
        }
    }

    // MARK: Bypassing the page cache

    /// Linux's O_DIRECT, which Glibc's Swift module does not export (its value differs by architecture).
    private static var directFlag: Int32? {
        #if arch(x86_64)
            0o40_000
        #elseif arch(arm64)
            0o200_000
        #else
            nil
        #endif
    }

    /// The aligned memory `O_DIRECT` reads and writes through: appended bytes wait in `staged` until a whole
    /// buffer goes to the file; reads come through `bounce`. Everything before `written` is in the file.
    private final class DirectBuffers {
        static let alignment = 4096
        static let capacity = 1 << 20
        let staged = UnsafeMutableRawBufferPointer.allocate(byteCount: capacity, alignment: alignment)
        /// A read's whole blocks: a piece of `capacity` bytes and the block it starts in.
        let bounce = UnsafeMutableRawBufferPointer.allocate(byteCount: capacity + alignment, alignment: alignment)
        var stagedCount = 0
        var written = 0

        deinit {
            staged.deallocate()
            bounce.deallocate()
        }
    }

    private func appendDirectly(_ bytes: UnsafeRawBufferPointer, through direct: DirectBuffers) throws {
        var rest = bytes[...]
        while !rest.isEmpty {
            let count = min(rest.count, DirectBuffers.capacity - direct.stagedCount)
            UnsafeMutableRawBufferPointer(rebasing: direct.staged[direct.stagedCount..<direct.stagedCount + count])
                .copyMemory(from: UnsafeRawBufferPointer(rebasing: rest.prefix(count)))
            direct.stagedCount += count
            size += count
            rest = rest.dropFirst(count)
            if direct.stagedCount == DirectBuffers.capacity {
                try writeAll(UnsafeRawBufferPointer(direct.staged), at: direct.written)
                direct.written += DirectBuffers.capacity
                direct.stagedCount = 0
            }
        }
    }

    private func readDirectly(
        at offset: Int, into buffer: UnsafeMutableRawBufferPointer, through direct: DirectBuffers
    ) throws -> Int {
        guard offset < size, !buffer.isEmpty else { return 0 }
        if offset >= direct.written {
            // Still in memory.
            let start = offset - direct.written
            let count = min(buffer.count, direct.stagedCount - start)
            UnsafeMutableRawBufferPointer(rebasing: buffer[..<count])
                .copyMemory(from: UnsafeRawBufferPointer(rebasing: direct.staged[start..<start + count]))
            return count
        }
        // Whole aligned blocks around the range, within what is written, through the bounce buffer.
        guard let bounce = direct.bounce.baseAddress else { return 0 }
        let alignedStart = offset / DirectBuffers.alignment * DirectBuffers.alignment
        let alignedEnd = min(direct.written, alignedStart + direct.bounce.count)
        var done = 0
        while alignedStart + done < alignedEnd {
            let count = pread(descriptor, bounce + done, alignedEnd - alignedStart - done, off_t(alignedStart + done))
            if count == 0 { break }
            if count < 0 {
                if errno == EINTR { continue }
                throw Self.error("cannot read a temporary file in \(directory)")
            }
            done += count
        }
        let available = alignedStart + done - offset
        guard available > 0 else { return 0 }
        let count = min(buffer.count, available)
        let start = offset - alignedStart
        UnsafeMutableRawBufferPointer(rebasing: buffer[..<count])
            .copyMemory(from: UnsafeRawBufferPointer(rebasing: direct.bounce[start..<start + count]))
        return count
    }

    private func writeAll(_ bytes: UnsafeRawBufferPointer, at offset: Int) throws {
        guard let base = bytes.baseAddress else { return }
        var done = 0
        while done < bytes.count {
            let count = pwrite(descriptor, base + done, bytes.count - done, off_t(offset + done))
            if count < 0 {
                if errno == EINTR { continue }
                throw Self.error("cannot write a temporary file in \(directory)")
            }
            done += count
        }
    }

    private static func error(_ message: String) -> TreeError {
        TreeError(.scratchSpace, "\(message): \(String(cString: strerror(errno)))")
    }

    /// The directory for temporary files: `$TMPDIR`, else `/tmp`.
    package static var defaultDirectory: String {
        ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
    }
}

extension TemporaryFile {
    /// The file's flushed bytes from its start, as a source.
    package struct Reader: ByteSource {
        private let file: TemporaryFile
        private var offset = 0

        /// A reader of `file` from its first byte.
        package init(_ file: TemporaryFile) {
            self.file = file
        }

        /// Copies the next bytes; 0 at the end.
        package mutating func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
            let count = try file.read(at: offset, into: buffer)
            offset += count
            return count
        }
    }
}
