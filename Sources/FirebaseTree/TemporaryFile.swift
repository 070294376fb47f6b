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

    /// Linux's O_TMPFILE (`__O_TMPFILE | O_DIRECTORY`), which Glibc's Swift module does not export.
    private static let openTemporaryFile: Int32 = 0o20_000_000 | O_DIRECTORY

    /// A new, empty file in `directory`.
    package init(in directory: String = defaultDirectory) throws {
        self.directory = directory
        descriptor = open(directory, Self.openTemporaryFile | O_RDWR | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw Self.error("cannot create a temporary file in \(directory)") }
    }

    deinit {
        close(descriptor)
    }

    /// Appends `bytes` at the end of the file.
    package func append(_ bytes: UnsafeRawBufferPointer) throws {
        size += bytes.count
        if pending.count + bytes.count > Self.writeBuffer { try flush() }
        if bytes.count >= Self.writeBuffer {
            try write(bytes)
        } else {
            pending.append(contentsOf: bytes)
        }
    }

    /// Writes what `append` buffered; `read` sees only flushed bytes.
    package func flush() throws {
        guard !pending.isEmpty else { return }
        try pending.withUnsafeBytes { try write($0) }
        pending.removeAll(keepingCapacity: true)
    }

    /// Reads up to `buffer.count` flushed bytes from `offset`; returns how many (0 at the end).
    package func read(at offset: Int, into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
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
