import Foundation
import Storage

/// A file written under a temporary name beside it and renamed into place by `commit()`.
///
/// The temporary file is safe in a directory others can write to: its name is unpredictable, it is created
/// exclusively and never through a symbolic link (`O_CREAT | O_EXCL | O_NOFOLLOW`), mode 0600 from the start, and
/// the final rename replaces a link planted at the destination rather than writing through it. Without `--force`
/// the rename itself refuses an existing destination (`RENAME_NOREPLACE`), so nothing created meanwhile is lost.
///
/// A destination that is no file to replace is written in place, as `cp` and `pg_dump -f` write it: a character
/// device (`/dev/null`, a terminal: only root makes them, so none is planted), a named pipe of the console's own
/// user, and the console's own streams by name (`/dev/stdout`, `/dev/fd/N`, `/proc/self/fd/N`). A rename would
/// replace the device node or the link for every program on the machine (as root) or fail.
final class OutputFile {
    /// Runs `body` with a writer into the file at `path` (gzip-compressed when the name ends in `.gz`), and puts
    /// the file in place when `body` returns; when anything throws, no file is left. `createsDirectory`: the
    /// directory may be made (the default `exports/`); a path the operator typed must name one that exists.
    static func writing<Result>(
        to path: String, replacing: Bool, createsDirectory: Bool = false, permissions: mode_t = 0o600,
        _ body: (_ write: (UnsafeBufferPointer<UInt8>) throws -> Void) throws -> Result
    ) throws -> Result {
        let file = try OutputFile(
            path: path, replacing: replacing, createsDirectory: createsDirectory,
            permissions: permissions)
        do {
            // Compressing is the export's pace on one core (about 60 MB of JSON a second): on every core.
            let gzip =
                path.hasSuffix(".gz")
                ? try GzipWriter(threads: ProcessInfo.processInfo.activeProcessorCount) { try file.write($0) } : nil
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

    /// Replaces the file at `path` with `text` atomically (a temporary file in its directory, renamed over it),
    /// readable by every user: a metrics file, which the collector's user reads.
    static func replace(_ path: String, withReadable text: String) throws {
        try writing(to: path, replacing: true, permissions: 0o644) { write in
            var bytes = Array(text.utf8)
            try bytes.withUnsafeMutableBufferPointer { try write(UnsafeBufferPointer($0)) }
        }
    }

    /// Runs `body` with a writer to `destination`: stdout for `-` (nil when the reader closed the pipe), else the
    /// file, as `writing(to:replacing:createsDirectory:_:)` writes it.
    static func writing<Result>(
        toFileOrStandardOutput destination: String, replacing: Bool, createsDirectory: Bool = false, session: Session,
        _ body: (_ write: (UnsafeBufferPointer<UInt8>) throws -> Void) throws -> Result
    ) throws -> Result? {
        // What the session printed before comes first: stdout may be the destination under another name too
        // (`/dev/stdout`, written in place).
        session.output.flush()
        guard destination == "-" else {
            return try writing(to: destination, replacing: replacing, createsDirectory: createsDirectory, body)
        }
        return try writingStandardOutput(body)
    }

    /// Runs `body` with a writer to stdout, or to `pager` when given (a terminal's); nil when the reader closed
    /// the pipe (`admin export - | head`, or quit the pager).
    static func writingStandardOutput<Result>(
        through pager: PagedStream? = nil,
        _ body: (_ write: (UnsafeBufferPointer<UInt8>) throws -> Void) throws -> Result
    ) throws -> Result? {
        do {
            guard isatty(STDOUT_FILENO) == 1 else { return try body { try writeAll($0, to: STDOUT_FILENO) } }
            // On a terminal the data's control characters show as escapes, not obeyed.
            var filter = TerminalByteFilter()
            let send = { (bytes: [UInt8]) throws in
                try bytes.withUnsafeBufferPointer { bytes in
                    if let pager { try pager.write(bytes) } else { try writeAll(bytes, to: STDOUT_FILENO) }
                }
            }
            let result = try body { try send(filter.filter($0)) }
            try send(filter.filter(UnsafeBufferPointer(start: nil, count: 0)))
            try pager?.finish()
            return result
        } catch Closed.byReader {
            try? pager?.finish()
            return nil
        }
    }

    let path: String
    private let replacing: Bool
    /// Where the data goes until `commit()` renames it to `path`; nil when `path` is written in place.
    private let temporaryPath: String?
    private let descriptor: Int32
    private var isOpen = true

    /// `permissions`: the file's mode; 0600 unless the file is meant for another user to read (metrics).
    init(path: String, replacing: Bool, createsDirectory: Bool, permissions: mode_t = 0o600) throws {
        self.path = path
        self.replacing = replacing
        let directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
        var isDirectory: ObjCBool = false
        if !FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory) {
            guard createsDirectory else {
                throw ConsoleError(.commandFailed, "cannot write \(path): the directory \(directory) does not exist")
            }
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } else if !isDirectory.boolValue {
            throw ConsoleError(.commandFailed, "cannot write \(path): \(directory) is not a directory")
        }
        if let descriptor = try Self.openInPlace(path) {
            (temporaryPath, self.descriptor) = (nil, descriptor)
            return
        }
        var info = stat()
        if !replacing, lstat(path, &info) == 0 {
            throw ConsoleError(.commandFailed, "\(path) exists; use --force to replace it")
        }
        let name = URL(fileURLWithPath: path).lastPathComponent
        var opened: (String, Int32)?
        for _ in 0..<16 {
            let candidate = "\(directory)/.\(name).\(Self.randomSuffix()).tmp"
            // 0600 by default: exports hold the users' data. (The umask may narrow a wider mode; fchmod below
            // widens it back, since a metrics file is useless if its collector cannot read it.)
            let descriptor = open(candidate, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, permissions)
            if descriptor >= 0 {
                if permissions != 0o600 { fchmod(descriptor, permissions) }
                opened = (candidate, descriptor)
                break
            }
            guard errno == EEXIST else {
                throw ConsoleError(.commandFailed, "cannot create \(candidate): \(String(cString: strerror(errno)))")
            }
        }
        guard let (temporaryPath, descriptor) = opened else {
            throw ConsoleError(.commandFailed, "cannot create a temporary file in \(directory)")
        }
        self.temporaryPath = temporaryPath
        self.descriptor = descriptor
    }

    /// A descriptor for writing `path` in place when it is a device, the user's own named pipe or one of the
    /// console's own streams by name; nil when it is (or will be) a file to write beside and rename.
    private static func openInPlace(_ path: String) throws -> Int32? {
        if let stream = ownStream(path) {
            let copy = dup(stream)
            guard copy >= 0 else {
                throw ConsoleError(.commandFailed, "cannot write \(path): \(String(cString: strerror(errno)))")
            }
            return copy
        }
        // Following links: /dev/stderr or a link to /dev/null is written where it leads.
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        switch info.st_mode & S_IFMT {
        case S_IFREG:
            return nil
        case S_IFCHR:
            break
        case S_IFIFO where info.st_uid == geteuid():
            break
        case S_IFDIR:
            throw ConsoleError(.commandFailed, "cannot write \(path): it is a directory")
        default:
            // Another user's named pipe or a socket: not ours to write into, and replaced only with --force.
            return nil
        }
        let descriptor = open(path, O_WRONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw ConsoleError(.commandFailed, "cannot write \(path): \(String(cString: strerror(errno)))")
        }
        return descriptor
    }

    /// The descriptor a path names when it is one of the console's own streams (`/dev/stdout`, `/dev/fd/1`,
    /// `/proc/self/fd/1`): written through that descriptor, at its offset, as the shell set it up (`>>` appends).
    private static func ownStream(_ path: String) -> Int32? {
        switch path {
        case "/dev/stdout": return STDOUT_FILENO
        case "/dev/stderr": return STDERR_FILENO
        default:
            for prefix in ["/dev/fd/", "/proc/self/fd/"] where path.hasPrefix(prefix) {
                guard let number = Int32(path.dropFirst(prefix.count)), number >= 0 else { return nil }
                return fcntl(number, F_GETFD) >= 0 ? number : nil
            }
            return nil
        }
    }

    /// Twelve random letters and digits: a name nobody can guess and plant in advance.
    private static func randomSuffix() -> String {
        let alphabet = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
        var generator = SystemRandomNumberGenerator()
        return String((0..<12).map { _ in alphabet[Int.random(in: alphabet.indices, using: &generator)] })
    }

    func write(_ bytes: UnsafeBufferPointer<UInt8>) throws {
        try Self.writeAll(bytes, to: descriptor)
    }

    /// Flushes to disk and renames the file into place (written in place: closes it).
    func commit() throws {
        guard let temporaryPath else {
            Foundation.close(descriptor)
            isOpen = false
            return
        }
        guard fsync(descriptor) == 0 else {
            throw ConsoleError(.commandFailed, "cannot write \(path): \(String(cString: strerror(errno)))")
        }
        Foundation.close(descriptor)
        isOpen = false
        // rename(2) replaces the destination's directory entry, a symbolic link included, and never writes
        // through it.
        guard Self.rename(temporaryPath, to: path, replacing: replacing) == 0 else {
            let reason =
                errno == EEXIST
                ? "it was created meanwhile; use --force to replace it" : String(cString: strerror(errno))
            unlink(temporaryPath)
            throw ConsoleError(.commandFailed, "cannot rename \(temporaryPath) to \(path): \(reason)")
        }
    }

    /// rename(2), or renameat2 with RENAME_NOREPLACE when an existing file must not be replaced (where the C
    /// library has it; else a plain rename after the existence check).
    private static func rename(_ from: String, to: String, replacing: Bool) -> Int32 {
        if !replacing, let renameat2 = renameat2Function {
            let result = renameat2(AT_FDCWD, from, AT_FDCWD, to, 1)
            if result == 0 || errno != EINVAL && errno != ENOSYS { return result }
        }
        return Foundation.rename(from, to)
    }

    private static let renameat2Function:
        (@convention(c) (Int32, UnsafePointer<CChar>, Int32, UnsafePointer<CChar>, UInt32) -> Int32)? = {
            guard let symbol = dlsym(dlopen(nil, RTLD_NOW), "renameat2") else { return nil }
            return unsafeBitCast(
                symbol,
                to: (@convention(c) (Int32, UnsafePointer<CChar>, Int32, UnsafePointer<CChar>, UInt32) -> Int32).self)
        }()

    /// Removes the temporary file after a failure.
    func discard() {
        if isOpen { Foundation.close(descriptor) }
        isOpen = false
        if let temporaryPath { unlink(temporaryPath) }
    }

    /// The other end of a pipe was closed.
    enum Closed: Error { case byReader }

    static func writeAll(_ bytes: UnsafeBufferPointer<UInt8>, to descriptor: Int32) throws {
        guard let base = bytes.baseAddress else { return }
        var offset = 0
        while offset < bytes.count {
            let written = Foundation.write(descriptor, base + offset, bytes.count - offset)
            if written < 0 {
                if errno == EINTR { continue }
                if errno == EPIPE { throw Closed.byReader }
                throw ConsoleError(.commandFailed, "cannot write: \(String(cString: strerror(errno)))")
            }
            offset += written
        }
    }
}
