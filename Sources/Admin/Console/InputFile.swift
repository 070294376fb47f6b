import Foundation
import Storage

/// A file (or stdin, for `-`) opened for a streaming read.
final class InputFile {
    let path: String
    private let descriptor: Int32

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
    func source(progress: ProgressBar? = nil) throws -> any ByteSource {
        let file = FileDescriptorSource(descriptor: descriptor, name: path)
        if let progress {
            let counted = ProgressSource(base: file, bar: progress)
            return path.hasSuffix(".gz") ? try GzipSource(counted, name: path) : counted
        }
        return path.hasSuffix(".gz") ? try GzipSource(file, name: path) : file
    }

    /// The file's size in bytes, when it is a regular file.
    var size: Int? {
        var info = stat()
        guard fstat(descriptor, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return nil }
        return Int(info.st_size)
    }

    func close() {
        if descriptor != STDIN_FILENO { Foundation.close(descriptor) }
    }
}
