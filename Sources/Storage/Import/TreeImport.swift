import FirebaseTree
import Foundation
internal import PostgresClient

/// Import and the write verbs: a Firebase tree (or a node of it) loaded into the tables in one transaction, with
/// Firebase's semantics, the kept copies settled after it.
struct TreeImport {
    /// The connection that writes.
    let connection: StoreConnection
    /// The lookups and like owners an import settles.
    let copies: DerivedCopies
    /// Held by a whole-tree import, so that checks and repairs see it running.
    let maintenance: MaintenanceLock
    /// Whether the tables are on Citus, where likes find their owners another way.
    let distribution: Distribution
    /// What a write inside a record reads of it, and the children a misplaced merge is compared with.
    let export: TreeExport
    /// The rows a replace, a merge or a repeated key removes.
    let treeRows: TreeRows

    /// `Store.importTree`: see there.
    func importTree(
        from source: some ByteSource, options: ImportOptions = ImportOptions(),
        reopening: (@Sendable () throws -> any ByteSource)? = nil, observer: ImportObserver = ImportObserver()
    ) throws -> ImportReport {
        for key in options.at {
            if let problem = FirebaseKey.problem(withNodeKey: key) {
                throw StorageError(.invalidValue, "cannot import at \"\(key)\": not a Firebase key: \(problem)")
            }
        }
        let clock = ContinuousClock()
        let started = clock.now
        var report: ImportReport
        if options.at.count > 1,
            let intoRecord = try importIntoRecord(from: source, options: options, onReject: observer.onReject)
        {
            report = intoRecord
        } else {
            report =
                options.mode == .replace && options.at.isEmpty
                ? try importWholeTree(from: source, options: options, reopening: reopening, observer: observer)
                : try importNode(from: source, options: options, observer: observer)
            report.isDryRun = options.isDryRun
            report.mode = options.mode
        }
        report.seconds = (clock.now - started).seconds
        return report
    }

    /// Runs `body` in the import's transaction (rolled back for a dry run), with no lock timeout and the import's
    /// application name, which the switch of a whole-tree import looks for.
    func inImportTransaction<Result>(rollback: Bool, _ body: () throws -> Result) throws -> Result {
        try connection.withTransaction(rollback: rollback) {
            try connection.execute(
                """
                SELECT set_config('lock_timeout', '0', true),
                    set_config('application_name', \(StoreConnection.importApplicationName), true)
                """)
            return try body()
        }
    }

    /// The session this import's loads write on.
    var target: TreeLoad.Target {
        TreeLoad.Target(connection: connection, treeRows: treeRows, copies: copies, export: export)
    }

    /// An import's failure while (or after) reading: when `reading` is the importer whose reading failed, the
    /// error says how far it read and that nothing was kept.
    static func failed(_ error: any Error, reading: TreeImporter?, options: ImportOptions) -> any Error {
        guard let error = error as? StorageError, let reading else { return error }
        return error.adding(
            context: options.isWrite
                ? "write rolled back" : "import rolled back after reading \(reading.bytesRead) bytes")
    }

    /// Reads the file with the import's one session: `load`, then, when `likes` reads them after the rest, the
    /// likes it skipped (`indexes` built before a repeated key's rows go). Returns the report and whether likes
    /// were staged (to be given their owners); `reading` is the importer whose reading failed, when one did.
    func read(
        _ load: TreeLoad, likes: LikesAfterPosts?, indexes: DeferredIndexes?, observer: ImportObserver,
        onStep: @escaping (ImportStep) -> Void, reading: inout TreeImporter?
    ) throws -> (report: ImportReport, stagedLikes: Bool) {
        reading = load.importer
        let report: ImportReport
        do {
            // The posts found misshapen are stored again before the likes, whose owners are the posts' as stored.
            report = try load.run()
        } catch {
            // The likes it skipped come before where it failed: a failure of theirs is the import's.
            if let likes, let nodes = load.importer.topLevel.deferred, let checking = try? likes.checking(nodes) {
                checking.loader.isCancelled = observer.isCancelled
                do {
                    _ = try checking.run()
                } catch let earlier {
                    reading = checking.importer
                    throw earlier
                }
            }
            throw error
        }
        guard let likes, let nodes = load.importer.topLevel.deferred else { return (report, load.stagedLikes) }
        // The file's bytes are all read by now: a progress display says what the rows still counting are.
        observer.onStep(.readingAgain(key: LikesAfterPosts.key))
        let likesLoad = try likes.loading(
            nodes, posts: load.loader.counts[TreeTable.posts.rawValue].rows, on: target, indexes: indexes,
            onStep: onStep)
        let rowsBefore = load.loader.totalRows
        likesLoad.loader.onRows = { observer.onRows(rowsBefore + $0) }
        likesLoad.loader.isCancelled = observer.isCancelled
        reading = likesLoad.importer
        let likesReport = try likesLoad.run()
        return (
            .combining([report, likesReport], nodes: load.importer.topLevel.reportedNodes),
            load.stagedLikes || likesLoad.stagedLikes
        )
    }

    /// The refusal of an import that would empty the store (or, with a path, that node) without leave.
    static func emptyingRefused(at path: [String], everyValueRejected: Bool) -> StorageError {
        let node = path.isEmpty ? "the store" : "the node at /" + path.joined(separator: "/")
        let holds = everyValueRejected ? "every value in the file was rejected" : "the file holds nothing (null or {})"
        let error = StorageError(
            .refused, "\(holds): replacing \(node) with it would delete everything there",
            hint: "Nothing was changed. If emptying it is what you want, allow it.")
        return error.remedied(.allowEmptying)
    }

    /// The largest file `importIntoRecord` reads: Firebase's SDKs refuse a single write of more than 16 MB.
    static let recordFileLimit = 16 << 20

    /// The children `keys` of the node at `path`, each as its export holds it (those the node does not hold are
    /// left out).
    func exportedChildren(of path: [String], keys: [String]) throws -> [TreeKey: TreeValue] {
        var bytes: [UInt8] = []
        _ = try export.exportChildren(at: path, keys: keys, options: .init(rendersArrays: false)) {
            bytes.append(contentsOf: $0)
        }
        return try TreeValue.parse(json: String(decoding: bytes, as: UTF8.self), normalizing: false)?.children ?? [:]
    }

    /// The node at `path` as a tree, nil when nothing is there.
    func exportedValue(at path: [String]) throws -> TreeValue? {
        var bytes: [UInt8] = []
        _ = try export.exportTree(at: path, options: .init(rendersArrays: false)) { bytes.append(contentsOf: $0) }
        return try TreeValue.parse(json: String(decoding: bytes, as: UTF8.self), normalizing: false)
    }
}
