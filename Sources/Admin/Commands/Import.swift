import ArgumentParser
import Foundation
import Storage

extension ImportOptions.Mode: ExpressibleByArgument {}

/// `import FILE`: loads a Firebase JSON export into the store in one transaction.
struct Import: ConsoleCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Import a Firebase JSON export (replacing the store, or merging), in one transaction.",
        discussion: """
            FILE is an export from the Firebase console, the REST API or a daily backup (FILE.gz is decompressed \
            as it is read), or - for stdin. It is read as a stream, so its size does not matter. Known parts of \
            the tree (users, posts in either app's shape, postLikes, followers, following, timeline, chats, \
            messages) go into typed tables; everything else is kept as it is, so that `export` gives the same tree \
            back.

            --mode replace (the default) makes the store equal to the file. --mode merge is Firebase's update: \
            each child the file names (users, posts, ... at the root) replaces the store's child of that name \
            whole, a null one deletes it, and the store's other children stay. --at PATH takes the file as the \
            node at PATH (an export of /posts alone): replace replaces that node, merge updates its children.

            An import is one serializable step: it locks the store's tables against writes until it commits, so \
            two merges run one after the other, never mixed, and the app's writes wait for it. A replace of the \
            whole store fills new tables beside the store's and switches them in at its end: reads (get, export, \
            check, the app's) go on answering from the store as it was while the file loads, and wait only for \
            the switch (milliseconds), after which they read the whole import, never a store between. The switch \
            asks for its lock (on the tables and the views over them) 0.1 s at a time, so that a long export does \
            not make later readers queue behind it; a transaction that read the store before the import and then \
            waits to write it would deadlock with the switch, so its statement is cancelled (the report warns, \
            naming the session). Where the tables carry what a switch cannot take along (a trigger, a policy, a \
            publication, a foreign key, a materialized view over them, an importing role that does not own them), \
            the import locks reads out from its first row to its commit instead, and says why. On Citus the new \
            tables are distributed as the store's are, and one session loads them. A \
            waiting command fails after `settings lock_timeout` (5 s) with a message naming the import; the \
            import itself waits as long as it takes for other imports and the app's open transactions.

            A file that holds nothing (null or {}) does not replace a store (or, with --at, a node) that holds \
            something unless --allow-empty or --yes says so, even when a terminal asked first: a failed backup \
            job that saved null must not wipe production.

            Values Firebase would refuse (bad keys, paths deeper than 32 levels or longer than 768 bytes, strings \
            over 10 MB) and strings PostgreSQL cannot hold (NUL) are rejects: the first aborts the import unless \
            --max-rejects lets some through. Each reject is written as a JSON line (path, reason, value; a value over \
            1 MB as "truncated": true and its first megabyte as "value_prefix") to the rejects file, by default \
            FILE.rejects.jsonl in the current directory, created mode 0600; an existing one is replaced only with \
            --force. The default file is kept by an import that commits; a dry run or a failed import names its \
            first rejects on stderr instead (--rejects FILE keeps the file in every case).

            --only NODE,… and --exclude NODE,… import some top-level nodes of the file, as pg_restore's -t picks \
            tables: the selected nodes are replaced whole (a selected node the file lacks is removed; with --mode \
            merge it stays), every other node of the store is left as it is, and the file's other nodes are \
            skipped without being checked. One session, the file read once; not with --at.

            A malformed byte, a lost connection or Ctrl-C leave the store exactly as it was.

            A replace of the whole store loads as pg_restore -j does: over --jobs sessions (default: one per \
            core), each reading the file and loading the top-level nodes it reaches first; then the sessions \
            share the index builds of every session's tables, once the rows are in (--keep-indexes builds them \
            before), and their statistics. The store, the report and any error are those of one session; each \
            session decompresses a .gz file for itself. stdin or a pipe, --dry-run, --max-rejects, a distributed \
            store (Citus), --mode merge and --at load on one session (an explicit --jobs says so in a warning), \
            and no more sessions open than the server's connection limits leave room for (keeping one free). \
            The report times the steps after the reading on its "(after reading)" lines (adding up the sessions' \
            seconds), the commit last: there the server releases the files of the tables replaced (a second or \
            more for a store of gigabytes), which readers no longer wait for.

            Examples:
              import backup.json
              import backup-2026-11-21.json.gz
              import backup.json --dry-run
              import backup.json --jobs 1
              import users-only.json --mode merge
              import posts.json --at /posts
              import alice-posts.json --at /posts/alice --mode merge
              import backup.json --max-rejects 10 --rejects rejected.jsonl
              import backup.json --only users,posts
              import backup.json --exclude chats,messages
              import - --format json < backup.json
            """)

    @Argument(help: "The export to read, or - for stdin.", completion: .file())
    var file: String

    @Option(help: "replace (the store becomes the file) or merge (like Firebase's update).")
    var mode: ImportOptions.Mode = .replace

    @Flag(help: "Parse, map and load, report, then roll back.")
    var dryRun = false

    @Option(
        help: ArgumentHelp(
            "The file is the node at this Firebase path (an export of /posts alone, say).",
            valueName: "path"))
    var at = "/"

    @OptionGroup var confirmation: Confirmation

    @OptionGroup var topLevel: TopLevelOptions

    @Option(help: "Let up to N rejected values through instead of aborting on the first.")
    var maxRejects = 0

    @Flag(help: "Let a file that holds nothing (null or {}) empty the store, or the node at --at (also: --yes).")
    var allowEmpty = false

    @Flag(help: "Build every index before the rows load instead of after them (slower).")
    var keepIndexes = false

    @Option(
        help: ArgumentHelp(
            "Sessions a replace of the whole store loads with (default: one per core).",
            discussion: "Each reads the file and loads the top-level nodes it reaches first. A plain file only."))
    var jobs: Int?

    @Option(help: "Where to write rejected values as JSON lines (default: FILE.rejects.jsonl).", completion: .file())
    var rejects: String?

    @Flag(help: "Replace an existing rejects file.")
    var force = false

    @Option(help: "Output format of the report (default: the session's).")
    var format: OutputFormat?

    func validate() throws {
        guard maxRejects >= 0 else { throw ValidationError("--max-rejects must be 0 or more") }
        if let jobs, jobs < 1 { throw ValidationError("--jobs must be 1 or more") }
        _ = try FirebasePath.keys(of: at)
        try topLevel.validate(path: at, option: "--at")
    }

    func run(in session: Session) throws {
        let input = try InputFile(path: file)
        defer { input.close() }
        let store = try session.store()
        let keys = try FirebasePath.keys(of: at)
        if mode == .replace, !dryRun, try !store.isEmpty() {
            let what =
                topLevel.selection.map { Self.describe($0) }
                ?? (keys.isEmpty ? "everything the store holds" : "the node at \(at)")
            guard
                confirmation.confirm(
                    "import --mode replace deletes \(what) and loads \(file) instead. Go on?", in: session)
            else { return }
        }
        // The default file belongs to an import that commits: a dry run or a failed import that left one would
        // make the next try, the one its hint suggests, fail on the existing file.
        let rejectsFile = try RejectsFile(
            path: rejects ?? Self.defaultRejectsPath(for: file), replacing: force, keepsOnlyIfCommitted: rejects == nil)
        var options = ImportOptions(
            mode: mode, isDryRun: dryRun, maximumRejects: maxRejects, at: keys,
            allowsEmptying: allowEmpty || confirmation.yes, keepsIndexes: keepIndexes, jobs: jobs)
        options.topLevel = topLevel.selection
        if options.topLevel != nil, let jobs, jobs > 1 {
            session.warn("--only and --exclude load on one session: --jobs \(jobs) is not used")
        }
        let report: ImportReport
        let progress = ProgressBar("import", total: input.size, session: session)
        defer { progress?.finish() }
        do {
            report = try store.importTree(
                from: input.source(progress: progress), options: options, reopening: input.reopener(progress: progress),
                observer: ImportObserver(
                    onReject: { try rejectsFile.write($0) }, onRows: { progress?.update(rows: $0) },
                    isCancelled: { Interrupt.isPending }, onStep: { progress?.show($0.description) }))
            progress?.finish()
            try rejectsFile.finish(committed: !dryRun)
        } catch let error as StorageError {
            try? rejectsFile.finish(committed: false)
            var error = error
            if error.sqlStateCode == "57014" {
                // Ctrl-C, SIGTERM or a timeout: the server's words say only that a statement stopped.
                error.hint = "The import was interrupted and rolled back: the store is as it was before it."
            }
            throw ConsoleError.from(error.adding(context: "importing \(file)")).appending(rejectsFile.summary)
        } catch {
            try? rejectsFile.finish(committed: false)
            throw error
        }
        for warning in report.warnings { session.warn("\(warning.path): \(warning.message)") }
        if report.warningCount > report.warnings.count {
            session.warn("… and \(report.warningCount - report.warnings.count) more warnings")
        }
        if let summary = rejectsFile.summary { session.warn(summary) }
        ImportReportView(report: report, file: file).print(to: session, format: format ?? session.format)
    }

    /// The nodes an `--only`/`--exclude` replace deletes and loads, for its question.
    static func describe(_ selection: TopLevelSelection) -> String {
        if let only = selection.only {
            return "the top-level nodes " + only.subtracting(selection.excluded).sorted().joined(separator: ", ")
        }
        return "every top-level node but " + selection.excluded.sorted().joined(separator: ", ")
    }

    static func defaultRejectsPath(for file: String) -> String {
        let name = file == "-" ? "stdin" : URL(fileURLWithPath: file).lastPathComponent
        return name + ".rejects.jsonl"
    }
}
