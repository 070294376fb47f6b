import ArgumentParser
import Foundation
import Storage

/// `sync SOURCE`: brings the store to a newer export, writing only what differs, online.
struct Sync: ConsoleCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync",
        abstract: "Bring the store to a newer Firebase export, writing only what differs (online, one transaction).",
        discussion: """
            Afterwards the store holds what `import SOURCE` would have made of it (export gives the same bytes), \
            but only the records, leaves and nodes that differ were written: a refresh from last night's backup \
            that changed 1 % of the tree writes about 1 % of the rows, their WAL and their index entries.

            SOURCE is read once, as a stream, and compared with the store's export as verify compares them (keys \
            in any order: an export out of RTDB order is sorted first, with temporary files in --temp-dir). Every \
            record that differs (a post, a user, a chat copy, a message) is rewritten whole; a like, a follow or \
            any other leaf is written alone; what the store holds and SOURCE lacks is deleted. The posts' likes \
            and lookups and the chats' holders follow, as after any write.

            One transaction, with row locks only: readers (the app, export, get, check) never wait for it, and \
            the app's writes wait only for the rows it rewrites. It reads the store from its own snapshot: if \
            another session changes a row that sync then rewrites, sync fails (SQLSTATE 40001) and changes \
            nothing, rather than losing that change; run it again. A malformed byte, a lost connection or Ctrl-C \
            leave the store as it was. No check, repair, import or other sync runs beside it: it fails at once \
            when one does, or queues with --wait; a merge or a write verb waits for it. When the role is a \
            superuser and the server compresses no WAL, the sync's transaction compresses its full-page images \
            (wal_compression = lz4): they are most of a small sync's WAL, and of what replicas are sent.

            --only NODE,… syncs only those top-level nodes, --exclude NODE,… all but those: the others stay as \
            they are, whatever SOURCE holds for them (not with --path). --path syncs the node at PATH with a SOURCE that is an export of that node alone (as import --at). \
            --dry-run lists the differences (as verify does) and what would be written, then rolls back. Values \
            import refuses are rejects, left out as import leaves them out: the first aborts unless --max-rejects \
            lets some through; each is written to the rejects file as import writes it (the default file, \
            FILE.rejects.jsonl, is replaced by each sync that commits, which runs again and again; --rejects FILE \
            is never replaced without --force), and verify --max-rejects accepts them. A SOURCE holding nothing \
            does not empty a store holding something unless --allow-empty or --yes.

            The report has a row per top-level node: paths added, changed and removed (the shallowest of each, \
            as verify counts them), values rejected, and the rows written and deleted (a rewritten record counts \
            in both). --format json prints one document:
              {"dry_run": false, "nodes": [{"node", "added", "changed", "removed", "rejected", "rows_written", \
            "rows_deleted"}...], "differences": [...], "summary": {...}}

            Exit status: 0 when synced (or already equal), 1 on an error (nothing was changed), 2 when the \
            database cannot be reached.

            Examples:
              sync backup-2026-11-26.json.gz
              sync backup.json --dry-run --max-differences 20
              sync posts.json --path /posts
              sync backup.json --only users,posts --yes
              sync backup.json --wait 600 --yes --format json
            """)

    @Argument(help: "The newer Firebase export: a file, a .gz file, or - for stdin.", completion: .file())
    var file: String

    @Option(help: "Sync the node at this Firebase path (SOURCE is an export of that node).")
    var path = "/"

    @Flag(help: "Compare, list the differences and what would be written, then roll back.")
    var dryRun = false

    @Option(help: "List at most this many differences with --dry-run or --format json (all are counted).")
    var maxDifferences = 1000

    @Option(help: "Let up to N rejected values through instead of aborting on the first.")
    var maxRejects = 0

    @Option(help: "Where to write rejected values as JSON lines (default: FILE.rejects.jsonl).", completion: .file())
    var rejects: String?

    @Flag(help: "Replace an existing rejects file.")
    var force = false

    @Flag(help: "Let a SOURCE that holds nothing empty the store, or the node at --path (also: --yes).")
    var allowEmpty = false

    @OptionGroup var confirmation: Confirmation

    @OptionGroup var waiting: MaintenanceWaitOption

    @OptionGroup var nodes: TopLevelOptions

    @Option(help: "Output format of the report (default: the session's).")
    var format: OutputFormat?

    @Flag(help: "Sort SOURCE first, without trying one pass (for an export known to be out of RTDB order).")
    var sort = false

    @Option(
        name: .customLong("temp-dir"),
        help: ArgumentHelp(
            "Where to keep temporary files: the plan of what to write, and SOURCE sorted (default: $TMPDIR or /tmp).",
            valueName: "dir"), completion: .directory)
    var temporaryDirectoryOption: String?

    /// `--temp-dir`, else `$TMPDIR`, else /tmp (an optional, so that the help says so once).
    private var temporaryDirectory: String { temporaryDirectoryOption ?? TreeSorter.defaultTemporaryDirectory }

    func validate() throws {
        guard maxRejects >= 0 else { throw ValidationError("--max-rejects must be 0 or more") }
        guard maxDifferences >= 0 else { throw ValidationError("--max-differences must be 0 or more") }
        _ = try FirebasePath.keys(of: path)
        try nodes.validate(path: path)
    }

    func run(in session: Session) throws {
        let input = try InputFile(path: file)
        defer { input.close() }
        let store = try session.store()
        let keys = try FirebasePath.keys(of: path)
        if !dryRun {
            let what = keys.isEmpty ? "the store" : "the node at \(path)"
            guard
                confirmation.confirm(
                    "sync rewrites what differs from \(file) in \(what), and deletes what \(file) lacks. Go on?",
                    in: session)
            else { return }
        }
        // A sync runs again and again on the same file (the cut-over recipe, every night or hour): its default
        // rejects file tells of the last sync that wrote, and each such sync replaces it.
        let rejectsFile = try RejectsFile(
            path: rejects ?? Import.defaultRejectsPath(for: file), replacing: force || rejects == nil,
            keepsOnlyIfCommitted: rejects == nil, command: "sync")
        var options = SyncOptions(
            at: keys, isDryRun: dryRun, maximumRejects: maxRejects, allowsEmptying: allowEmpty || confirmation.yes,
            maxListed: maxDifferences, sortingFirst: sort, temporaryDirectory: temporaryDirectory,
            wait: waiting.maintenanceWait(in: session))
        options.topLevel = nodes.selection
        let source = ComparedInput(
            input, name: file, command: "sync", sortsFirst: sort, temporaryDirectory: temporaryDirectory,
            session: session)
        defer { source.progress?.finish() }
        let report: SyncReport
        do {
            report = try store.sync(
                opening: source.open, options: options,
                observer: SyncObserver(
                    onReject: { try rejectsFile.write($0) }, isCancelled: { Interrupt.isPending },
                    onStep: { step in
                        // The reading is over once the writing begins: the bar says what follows.
                        if step != .comparing { source.progress?.show(step.description) }
                    }))
            source.progress?.finish()
            try rejectsFile.finish(committed: !dryRun)
        } catch let error as StorageError {
            try? rejectsFile.finish(committed: false)
            throw ConsoleError.from(error.adding(context: "syncing \(file)")).appending(rejectsFile.summary)
        } catch {
            try? rejectsFile.finish(committed: false)
            throw error
        }
        if let summary = rejectsFile.summary { session.warn(summary) }
        SyncReportView(report: report, file: file, sortedFirst: sort).print(
            to: session, format: format ?? session.format)
    }
}
