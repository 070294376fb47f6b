import Foundation
import Storage

/// A file (or stdin, for `-`) opened for a streaming read.
final class InputFile {
    let path: String
    private let descriptor: Int32
    /// The copy kept of a pipe's bytes, for a second pass.
    private var spool: SpooledSource?

    init(path: String) throws {
        self.path = path
        if path == "-" {
            descriptor = STDIN_FILENO
            return
        }
        descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw ConsoleError(.commandFailed, "cannot open \(path): \(String(cString: strerror(errno)))")
        }
        var info = stat()
        if fstat(descriptor, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR {
            Foundation.close(descriptor)
            throw ConsoleError(.commandFailed, "cannot read \(path): it is a directory")
        }
    }

    /// The bytes to read, decompressed when the name ends in `.gz`; `progress` counts the bytes of the file.
    /// With `copyDirectory`, what is read from stdin or a pipe is also kept in a temporary file there, for
    /// `rewound(progress:)`.
    func source(progress: ProgressBar? = nil, keepingCopyIn copyDirectory: String? = nil) throws -> any ByteSource {
        var file: any ByteSource = FileDescriptorSource(descriptor: descriptor, name: path)
        if let copyDirectory, size == nil {
            let copy: SpooledSource
            do {
                copy = try SpooledSource(file, temporaryDirectory: copyDirectory)
            } catch let error as TreeError {
                throw ConsoleError(.commandFailed, error.message)
            }
            spool = copy
            file = copy
        }
        return try decoded(file, progress: progress)
    }

    /// The bytes again from the first, for another pass, read apart from every other reading (two may run at
    /// once): a regular file opened again, stdin or a pipe from the copy `source(progress:keepingCopyIn:)` kept
    /// (the rest of the input is copied first).
    func rewound(progress: ProgressBar? = nil) throws -> any ByteSource {
        if let spool {
            let replay: any ByteSource
            do {
                replay = try spool.replay()
            } catch let error as TreeError {
                throw ConsoleError(.commandFailed, error.message)
            }
            return try decoded(replay, progress: progress)
        }
        guard let reopen = reopener(progress: progress) else {
            throw ConsoleError(.commandFailed, "cannot read \(path) a second time: it is not a regular file")
        }
        // A compressed file's reader moves the bar itself, by its offset in the file.
        let file = try reopen()
        guard let progress, !path.hasSuffix(".gz") else { return file }
        return ProgressSource(base: file, bar: progress)
    }

    private func decoded(_ file: any ByteSource, progress: ProgressBar?) throws -> any ByteSource {
        let counted = progress.map { ProgressSource(base: file, bar: $0) } ?? file
        return path.hasSuffix(".gz") ? try GzipSource(counted, name: path) : counted
    }

    /// Opens the same file again, from its first byte, for another reader beside the first (a parallel import's
    /// other sessions, or a second reading of one node): a regular file, decompressed when the name ends in `.gz`
    /// (each reader then decompresses what it reads, about a second of CPU per 200 MB of JSON here); nil for
    /// stdin or a pipe. The file is opened through this process's descriptor, so a file renamed or replaced
    /// meanwhile is still the one read. A compressed file's readers move `progress` themselves, by the least of
    /// their offsets in the file: the first reader's source, which skips only by reading, is not paced (a plain
    /// file's is, by seeks).
    func reopener(progress: ProgressBar?) -> (@Sendable () throws -> any ByteSource)? {
        guard size != nil else { return nil }
        let path = path
        let handle = "/proc/self/fd/\(descriptor)"
        let shared = path.hasSuffix(".gz") ? progress.map(SharedFileProgress.init(bar:)) : nil
        return {
            let descriptor = open(FileManager.default.fileExists(atPath: handle) ? handle : path, O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else {
                throw ConsoleError(.commandFailed, "cannot open \(path) again: \(String(cString: strerror(errno)))")
            }
            let file = OwnedFileSource(descriptor: descriptor, name: path)
            guard path.hasSuffix(".gz") else { return file }
            guard let shared else { return try GzipSource(file, name: path) }
            return try GzipSource(shared.reader(of: file), name: path)
        }
    }

    /// The file's size in bytes, when it is a regular file.
    /// Whether reading now would not wait: bytes are there, or the input ended (a regular file always).
    var hasInputReady: Bool {
        var descriptor = pollfd(fd: self.descriptor, events: Int16(POLLIN), revents: 0)
        return poll(&descriptor, 1, 0) > 0
    }

    var size: Int? {
        var info = stat()
        guard fstat(descriptor, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return nil }
        return Int(info.st_size)
    }

    func close() {
        if descriptor != STDIN_FILENO { Foundation.close(descriptor) }
    }

    /// Every byte of the file (decompressed when the name ends in `.gz`), for inputs read whole: scripts.
    func readAll() throws -> [UInt8] {
        var source = try source()
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        do {
            while case let count = try chunk.withUnsafeMutableBytes({ try source.read(into: $0) }), count > 0 {
                bytes += chunk[..<count]
            }
        } catch let error as TreeError {
            throw ConsoleError(.commandFailed, error.message)
        }
        return bytes
    }
}

/// A file descriptor's bytes, closed when the source goes.
final class OwnedFileSource: ByteSource {
    private var file: FileDescriptorSource

    /// Reads from `descriptor`, which it closes.
    init(descriptor: Int32, name: String) {
        file = FileDescriptorSource(descriptor: descriptor, name: name)
    }

    deinit { Foundation.close(file.descriptor) }

    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        try file.read(into: buffer)
    }

    func skip(_ count: Int) throws -> Int {
        try file.skip(count)
    }

    var skipsWithoutReading: Bool { file.skipsWithoutReading }
}
