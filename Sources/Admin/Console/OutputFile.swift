import Foundation
import Storage

/// A file written under a temporary name beside it and renamed into place by `commit()`.
final class OutputFile {
    /// Runs `body` with a writer into the file at `path` (gzip-compressed when the name ends in `.gz`), and puts
    /// the file in place when `body` returns; when anything throws, no file is left.
    static func writing<Result>(
        to path: String, replacing: Bool,
        _ body: (_ write: (UnsafeBufferPointer<UInt8>) throws -> Void) throws -> Result
    ) throws -> Result {
        let file = try OutputFile(path: path, replacing: replacing)
        do {
            let gzip = path.hasSuffix(".gz") ? try GzipWriter { try file.write($0) } : nil
            let result = try body { bytes in
                if let gzip { try gzip.write(bytes) } else { try file.write(bytes) }
            }
            try gzip?.finish()
            try file.commit()
            return result
        } catch {
            file.discard()
            throw error
        }
    }

    /// Runs `body` with a writer to `destination`: stdout for `-` (nil when the reader closed the pipe), else the
    /// file, as `writing(to:replacing:_:)` writes it.
    static func writing<Result>(
        toFileOrStandardOutput destination: String, replacing: Bool, session: Session,
        _ body: (_ write: (UnsafeBufferPointer<UInt8>) throws -> Void) throws -> Result
    ) throws -> Result? {
        guard destination == "-" else { return try writing(to: destination, replacing: replacing, body) }
        session.output.flush()
        return try writingStandardOutput(body)
    }

    /// Runs `body` with a writer to stdout; nil when the reader closed the pipe (`admin export - | head`).
    static func writingStandardOutput<Result>(
        _ body: (_ write: (UnsafeBufferPointer<UInt8>) throws -> Void) throws -> Result
    ) throws -> Result? {
        do {
            return try body { try writeAll($0, to: STDOUT_FILENO) }
        } catch Closed.byReader {
            return nil
        }
    }

    let path: String
    private let temporaryPath: String
    private let descriptor: Int32
    private var isOpen = true

    init(path: String, replacing: Bool) throws {
        self.path = path
        let directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
        if !FileManager.default.fileExists(atPath: directory) {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        }
        if !replacing, FileManager.default.fileExists(atPath: path) {
            throw ConsoleError(.commandFailed, "\(path) exists; use --force to replace it")
        }
        temporaryPath = "\(directory)/.\(URL(fileURLWithPath: path).lastPathComponent).\(getpid()).tmp"
        // 0600: exports hold the users' data.
        descriptor = open(temporaryPath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw ConsoleError(.commandFailed, "cannot create \(temporaryPath): \(String(cString: strerror(errno)))")
        }
    }

    func write(_ bytes: UnsafeBufferPointer<UInt8>) throws {
        try Self.writeAll(bytes, to: descriptor)
    }

    /// Flushes to disk and renames the file into place.
    func commit() throws {
        guard fsync(descriptor) == 0 else {
            throw ConsoleError(.commandFailed, "cannot write \(path): \(String(cString: strerror(errno)))")
        }
        Foundation.close(descriptor)
        isOpen = false
        guard rename(temporaryPath, path) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temporaryPath)
            throw ConsoleError(.commandFailed, "cannot rename \(temporaryPath) to \(path): \(reason)")
        }
    }

    /// Removes the temporary file after a failure.
    func discard() {
        if isOpen { Foundation.close(descriptor) }
        isOpen = false
        unlink(temporaryPath)
    }

    /// The other end of a pipe was closed.
    enum Closed: Error { case byReader }

    static func writeAll(_ bytes: UnsafeBufferPointer<UInt8>, to descriptor: Int32) throws {
        var offset = 0
        while offset < bytes.count {
            let written = Foundation.write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
            if written < 0 {
                if errno == EINTR { continue }
                if errno == EPIPE { throw Closed.byReader }
                throw ConsoleError(.commandFailed, "cannot write: \(String(cString: strerror(errno)))")
            }
            offset += written
        }
    }
}
