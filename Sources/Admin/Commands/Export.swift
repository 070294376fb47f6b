import ArgumentParser
import Foundation
import Storage

/// `export [FILE|-]`: writes the store as a Firebase JSON export.
struct Export: ConsoleCommand {
    static let configuration = CommandConfiguration(
        abstract: "Export the store as Firebase JSON, as the console's \"Export JSON\" writes it.",
        discussion: """
            By default the output is what the Firebase console's "Export JSON" gives: keys in RTDB order, numbers
            as JavaScript writes them, integer-keyed objects as arrays (the SDKs' rule) and priorities kept.
            --export-format gives the REST API's format=export instead (priorities, never arrays), and
            --no-priorities drops priorities as a plain REST GET does. The same data always gives the same bytes.

            FILE defaults to a new timestamped file under exports/; a name ending in .gz is gzip-compressed. The
            file (mode 0600: it holds user data) is written under a temporary name and renamed when complete, so a
            failed export leaves nothing behind; an existing file is only replaced with --force. - writes to
            stdout. --path exports one node instead of the whole tree (get prints one to the terminal).

            Examples:
              export
              export backup.json.gz
              export backup.json --pretty
              export posts-alice.json --path /posts/alice
              export - --no-priorities | gzip > backup.json.gz
            """)

    @Argument(help: "Where to write: a file, - for stdout (default: exports/export-TIMESTAMP.json).")
    var file: String?

    @Option(help: "Export only the node at this Firebase path.")
    var path = "/"

    @Flag(help: "Indent as the Firebase console does.")
    var pretty = false

    @Flag(help: "The REST API's format=export: priorities kept, never arrays.")
    var exportFormat = false

    @Flag(help: "Drop priorities, as a plain REST GET does.")
    var noPriorities = false

    @Flag(help: "Replace FILE if it exists.")
    var force = false

    func validate() throws {
        _ = try FirebasePath.keys(of: path)
    }

    func run(in session: Session) throws {
        let keys = try FirebasePath.keys(of: path)
        let store = try session.store()
        let options = JSONTextWriter.Options(
            isPretty: pretty, rendersArrays: !exportFormat, keepsPriorities: !noPriorities)
        let destination = file ?? Self.defaultPath()
        let report: ExportReport
        // Not when the JSON itself goes to the terminal: the bar would be drawn into it.
        let toTerminal = destination == "-" && session.output.isTerminal
        let progress = toTerminal ? nil : ProgressBar(
            "export", total: keys.isEmpty ? try store.estimatedRowCount() : nil, unit: .rows, session: session)
        defer { progress?.finish() }
        let export = { (write: (UnsafeBufferPointer<UInt8>) throws -> Void) throws -> ExportReport in
            try store.exportTree(at: keys, options: options, onProgress: { progress?.update(done: $0) }, to: write)
        }
        if destination == "-" {
            session.output.flush()
            // nil: `export - | head`, the reader has what it wanted.
            guard let written = try OutputFile.writingStandardOutput(export) else { return }
            report = written
        } else {
            report = try OutputFile.writing(to: destination, replacing: force, export)
        }
        progress?.finish()
        let megabytes = Double(report.bytes) / 1_000_000
        let rate = report.seconds > 0 ? megabytes / report.seconds : 0
        session.inform(
            "Exported \(report.rows) rows as \(report.bytes) bytes"
                + (destination == "-" ? "" : " to \(destination)")
                + " in \(String(format: "%.3f", report.seconds)) s (\(String(format: "%.1f", rate)) MB/s).")
    }

    static func defaultPath() -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.dateFormat = "yyyyMMdd-HHmmss"
        return "exports/export-\(formatter.string(from: Date())).json"
    }
}

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
