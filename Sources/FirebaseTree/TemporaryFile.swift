import Foundation

/// Scratch bytes on disk that nothing outlives: the file is created in `directory` and unlinked at once, so it
/// is gone when it is closed or the process dies (a kill -9 leaves nothing behind). Written by appending through
/// a buffer, read back at offsets.
final class TemporaryFile {
    private let descriptor: Int32
    private let directory: String
    private var pending: [UInt8] = []
    private static let writeBuffer = 1 << 20
    /// Bytes appended so far, flushed or not.
    private(set) var size = 0

    /// A new, empty file in `directory`.
    init(in directory: String) throws {
        self.directory = directory
        var template = Array((directory + "/admin-scratch-XXXXXX").utf8CString)
        let descriptor = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard descriptor >= 0 else { throw Self.error("cannot create a temporary file in \(directory)") }
        _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
        template.withUnsafeBufferPointer { _ = unlink($0.baseAddress!) }
        self.descriptor = descriptor
        pending.reserveCapacity(Self.writeBuffer)
    }

    deinit {
        close(descriptor)
    }

    /// Appends `bytes` at the end of the file.
    func append(_ bytes: UnsafeRawBufferPointer) throws {
        size += bytes.count
        if pending.count + bytes.count > Self.writeBuffer { try flush() }
        if bytes.count >= Self.writeBuffer {
            try write(bytes)
        } else {
            pending.append(contentsOf: bytes)
        }
    }

    /// Writes what `append` buffered; `read` sees only flushed bytes.
    func flush() throws {
        guard !pending.isEmpty else { return }
        try pending.withUnsafeBytes { try write($0) }
        pending.removeAll(keepingCapacity: true)
    }

    /// Reads up to `buffer.count` flushed bytes from `offset`; returns how many (0 at the end).
    func read(at offset: Int, into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        var done = 0
        while done < buffer.count {
            let count = pread(descriptor, buffer.baseAddress! + done, buffer.count - done, off_t(offset + done))
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
        var done = 0
        while done < bytes.count {
            let count = Foundation.write(descriptor, bytes.baseAddress! + done, bytes.count - done)
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
    static var defaultDirectory: String {
        ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
    }
}
