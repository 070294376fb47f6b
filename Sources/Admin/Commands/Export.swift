import ArgumentParser
import Foundation
import Storage

/// `export [FILE|-]`: writes the store as a Firebase JSON export.
struct Export: ConsoleCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Export the store as Firebase JSON, as the console's \"Export JSON\" writes it.",
        discussion: """
            By default the output is what the Firebase console's "Export JSON" gives: keys in RTDB order, numbers \
            as JavaScript writes them, integer-keyed objects as arrays (the SDKs' rule) and priorities kept. \
            --export-format gives the REST API's format=export instead (priorities, never arrays), and \
            --no-priorities drops priorities as a plain REST GET does. The same data always gives the same bytes.

            FILE defaults to a new timestamped file under exports/; a name ending in .gz is gzip-compressed. The \
            file (mode 0600: it holds user data) is written under a temporary name and renamed when complete, so a \
            failed export leaves nothing behind; an existing file is only replaced with --force. A device \
            (/dev/null), a named pipe of yours and /dev/stdout are written in place. - writes to stdout. --path \
            exports one node instead of the whole tree (get prints one to the terminal).

            A whole-tree export reads the tables over --jobs sessions (default: one per core) that share one \
            snapshot, as pg_dump -j does; the output is the same bytes with any number. Tables read ahead of the \
            output wait in memory (4 MB each) and beyond that in $TMPDIR. --jobs 1 reads everything on one session.

            On Citus, each of those reads the shards of each table from the nodes that hold them, in the same \
            snapshot, connecting to each node as the role and with the options it connected to the coordinator \
            with; where a node refuses that, the tables are read through the coordinator (slower), and the export \
            says why.

            Examples:
              export
              export backup.json.gz
              export backup.json --pretty
              export backup.json --jobs 1
              export posts-alice.json --path /posts/alice
              export - --no-priorities | gzip > backup.json.gz
            """)

    @Argument(
        help: "Where to write: a file, - for stdout (default: exports/export-TIMESTAMP.json).", completion: .file())
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

    @Option(help: "Sessions reading the tables of a whole-tree export, sharing one snapshot (default: one per core).")
    var jobs: Int?

    func validate() throws {
        _ = try FirebasePath.keys(of: path)
        if let jobs, jobs < 1 { throw ValidationError("--jobs must be 1 or more") }
    }

    func run(in session: Session) throws {
        let keys = try FirebasePath.keys(of: path)
        let store = try session.store()
        let options = JSONTextWriter.Options(
            isPretty: pretty, rendersArrays: !exportFormat, keepsPriorities: !noPriorities)
        let destination = file ?? Self.defaultPath()
        // Said once written: an export with no FILE should not leave a directory behind unannounced.
        let createsDirectory = file == nil && !FileManager.default.fileExists(atPath: "exports")
        // Not when the JSON itself goes to the terminal: the bar would be drawn into it.
        let toTerminal = destination == "-" && session.output.isTerminal
        let progress =
            toTerminal
            ? nil
            : ProgressBar(
                "export", total: keys.isEmpty ? try store.estimatedRowCount() : nil, unit: .rows, session: session)
        defer { progress?.finish() }
        let export = { (write: (UnsafeBufferPointer<UInt8>) throws -> Void) throws -> ExportReport in
            try store.exportTree(
                at: keys, options: ExportOptions(format: options, jobs: jobs),
                onProgress: { progress?.update(done: $0) },
                to: write)
        }
        // nil: `export - | head`, the reader has what it wanted.
        guard
            let report = try OutputFile.writing(
                toFileOrStandardOutput: destination, replacing: force, createsDirectory: file == nil, session: session,
                export)
        else { return }
        progress?.finish()
        // JSON ends without a newline, as Firebase writes it; on a terminal the next line starts on its own.
        if toTerminal {
            try [UInt8(ascii: "\n")].withUnsafeBufferPointer { try OutputFile.writeAll($0, to: STDOUT_FILENO) }
        }
        if report.rows == 0 {
            // Firebase's answer too (null), but a backup job should not keep it unawares.
            session.warn(
                keys.isEmpty ? "the store is empty: the export is null" : "nothing at \(path): the export is null")
        }
        let megabytes = Double(report.bytes) / 1_000_000
        let rate = report.seconds > 0 ? megabytes / report.seconds : 0
        // A .gz file's size on disk is not the JSON's: both are said.
        let compressed =
            destination.hasSuffix(".gz")
            ? (try? FileManager.default.attributesOfItem(atPath: destination)[.size] as? Int) : nil
        if createsDirectory {
            session.inform(
                "Created the directory exports/ in \(FileManager.default.currentDirectoryPath) for it "
                    + "(give a FILE to write elsewhere).")
        }
        if let reason = report.shardReadsUnavailable {
            session.inform("The shards were read through the coordinator: \(reason)")
        }
        session.inform(
            "Exported \(DomainViews.count(report.rows, "row")) as \(DomainViews.count(report.bytes, "byte")) of JSON"
                + (compressed.map { " (\(DomainViews.count($0, "byte")) gzipped)" } ?? "")
                + (destination == "-" ? "" : " to \(destination)")
                + (report.shardNodes > 0 ? " from the shards on \(DomainViews.count(report.shardNodes, "node"))" : "")
                + " in \(DomainViews.duration(report.seconds)) (\(String(format: "%.1f", rate)) MB/s).")
    }

    /// `exports/NAME-TIMESTAMP.json` (`export-` for the tree, `auth-` for the accounts), or with `-2`, `-3`… after
    /// the time where an export of the same second is there (the file is created exclusively all the same).
    static func defaultPath(named name: String = "export") -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.dateFormat = "yyyyMMdd-HHmmss"
        let stem = "exports/\(name)-\(formatter.string(from: Date()))"
        var path = stem + ".json"
        var number = 2
        while FileManager.default.fileExists(atPath: path), number < 1000 {
            path = stem + "-\(number).json"
            number += 1
        }
        return path
    }
}
