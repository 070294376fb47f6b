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
        reopening: (@Sendable () throws -> any ByteSource)? = nil,
        onReject: @escaping (ImportReject) throws -> Void = { _ in },
        onRows: @escaping (Int) -> Void = { _ in }, isCancelled: @escaping @Sendable () -> Bool = { false },
        onStep: @escaping (ImportStep) -> Void = { _ in }
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
            let intoRecord = try importIntoRecord(from: source, options: options, onReject: onReject)
        {
            report = intoRecord
        } else {
            let observer = ImportObserver(onReject: onReject, onRows: onRows, isCancelled: isCancelled, onStep: onStep)
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

    /// The loader of an import's rows. A like's owner is its post's, and in an export /postLikes comes before
    /// /posts: likes are staged until the posts are in. `freezing`: COPY FREEZE, into tables the import
    /// created in its transaction.
    func makeLoader(freezing: Bool, _ observer: ImportObserver) -> TableLoader {
        let loader = TableLoader(
            connection: connection, usesFreeze: freezing,
            destinations: [
                .postLikes: .init(
                    table: DerivedCopies.stagedLikesTable, create: { [copies] in try copies.stageLikes() })
            ])
        loader.onRows = observer.onRows
        loader.isCancelled = observer.isCancelled
        return loader
    }

    /// What an import does about a finding: a misshapen post goes to `reshape`; otherwise what is stored at the
    /// path goes (`deleteRows`), timed as a finishing step, `onDeleting` told the path first.
    func findingHandler(
        loader: TableLoader, reshape: PostsReshape, indexes: DeferredIndexes?, finishing: FinishingClock,
        onStep: @escaping (ImportStep) -> Void, onDeleting: @escaping ([String]) -> Void = { _ in }
    ) -> (ImportFinding) throws -> [TreeTable: Int] {
        { [treeRows, copies] finding in
            if reshape.note(finding) { return [:] }
            onDeleting(finding.path)
            defer { finishing.end() }
            return try Self.deleteRows(
                under: finding.path, loader: loader, indexes: indexes, treeRows: treeRows, copies: copies,
                onStep: onStep)
        }
    }

    /// An import's failure while (or after) reading: the loader's open COPY ended, and, when `reading` is the
    /// importer whose reading failed, the error says how far it read and that nothing was kept.
    static func failed(
        _ error: any Error, loader: TableLoader, reading: TreeImporter?, options: ImportOptions
    ) -> any Error {
        loader.abort()
        guard let error = error as? StorageError, let reading else { return error }
        return error.adding(
            context: options.isWrite
                ? "write rolled back" : "import rolled back after reading \(reading.bytesRead) bytes")
    }

    /// Reads the file with the import's one session: `importer`, then, when `likes` reads them after the rest,
    /// the likes it skipped. Returns the report and whether likes were staged (to be joined with the posts);
    /// `reading` is the importer whose reading failed, when one did.
    func read(
        _ importer: TreeImporter, loader: TableLoader, likes: LikesAfterPosts?, indexes: DeferredIndexes?,
        reshape: PostsReshape, observer: ImportObserver, onStep: @escaping (ImportStep) -> Void,
        reading: inout TreeImporter?
    ) throws -> (report: ImportReport, stagedLikes: Bool) {
        do {
            try importer.load()
            // Before the likes, whose owners are the posts' as they are stored.
            try Self.reshape(reshape, importer: importer, loader: loader, onReject: observer.onReject) { path in
                try Self.deleteRows(
                    under: path, loader: loader, indexes: indexes, treeRows: treeRows, copies: copies, onStep: onStep)
            }
        } catch {
            // The likes it skipped come before where it failed: a failure of theirs is the import's.
            if let likes, let nodes = importer.topLevel.deferred,
                let (checker, checking) = try? likes.checkingImporter(of: nodes)
            {
                checking.isCancelled = observer.isCancelled
                do {
                    try checker.load()
                } catch let earlier {
                    reading = checker
                    throw earlier
                }
            }
            throw error
        }
        guard let likes, let nodes = importer.topLevel.deferred else {
            return (importer.report, loader.redirected.contains(.postLikes))
        }
        // The file's bytes are all read by now: a progress display says what the rows still counting are.
        observer.onStep(.readingAgain(key: LikesAfterPosts.key))
        let (likesImporter, likesLoader) = try likes.loadingImporter(
            of: nodes, posts: loader.counts[TreeTable.posts.rawValue].rows, on: connection,
            indexes: indexes, treeRows: treeRows, copies: copies, onStep: onStep)
        let rowsBefore = loader.totalRows
        likesLoader.onRows = { observer.onRows(rowsBefore + $0) }
        likesLoader.isCancelled = observer.isCancelled
        do {
            try likesImporter.load()
        } catch {
            reading = likesImporter
            throw error
        }
        return (
            .combining([importer.report, likesImporter.report], nodes: importer.topLevel.reportedNodes),
            likesLoader.redirected.contains(.postLikes)
        )
    }

    /// What an import does about a finding at `path` (a merge's replaced child, a repeated key): the rows sent so
    /// far go into the tables, the indexes a DELETE may need are built, then whatever is stored at or below the
    /// path goes, staged likes included; how many rows of each table went.
    static func deleteRows(
        under path: [String], loader: TableLoader, indexes: DeferredIndexes?, treeRows: TreeRows,
        copies: DerivedCopies, onStep: (ImportStep) -> Void
    ) throws -> [TreeTable: Int] {
        try loader.flush()
        try indexes?.build(onStep: onStep)
        var deleted = try treeRows.deleteRows(under: path)
        if loader.redirected.contains(.postLikes) {
            deleted[.postLikes, default: 0] += try copies.deleteStagedLikes(under: path)
        }
        return deleted
    }

    /// Stores the nodes `importer` found misshapen again (`PostsReshape`), and counts their rows in its report
    /// in place of those they replace.
    static func reshape(
        _ reshape: PostsReshape, importer: TreeImporter, loader: TableLoader,
        onReject: @escaping (ImportReject) throws -> Void, deleteRows: ([String]) throws -> [TreeTable: Int]
    ) throws {
        guard !reshape.nodes.isEmpty else { return }
        let (deleted, stored) = try reshape.reshape(loader: loader, deleteRows: deleteRows, onReject: onReject)
        importer.report.replaceRows(
            deleted, with: stored, node: TreeImporter.reportedNode(TreeTable.feedPosts.rootKey ?? ""))
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

    /// Keeps what the store derives from /posts and /chats in step with what the import did to them: stores the
    /// likes it staged, then for posts and chat copies whose root it wrote (`written`) settles the lookup, and for
    /// posts the likes, of the keys whose holders changed (`changedKeys`: below one user, the keys held before,
    /// in `before`, or now but not both; all of them when it wrote the root). A whole-tree import held nothing
    /// before: the lookups are filled whole (but `filledLookups`, which the parallel import's sessions filled),
    /// and staging gave each like its owners. `isDistributed`: whether the store is distributed, when known.
    func settleDerivedRows(
        staged: Bool, wholeTree: Bool, written: Set<String>, before: [String: [String]?], at: [String],
        filledLookups: Set<String> = [], isDistributed: Bool?, onStep: (ImportStep) -> Void
    ) throws {
        let settlesLikes = !wholeTree && written.contains(HeldRecords.posts.table)
        let distributed = try isDistributed ?? (staged || settlesLikes ? distribution.isDistributed() : false)
        if staged {
            onStep(.storingLikes)
            try copies.storeStagedLikes(isDistributed: distributed)
        }
        for records in HeldRecords.all
        where (wholeTree || written.contains(records.table)) && !filledLookups.contains(records.lookup) {
            let keys =
                wholeTree ? nil : try copies.changedKeys(of: records, before: before[records.table] ?? nil, at: at)
            if keys?.isEmpty == true { continue }
            onStep(.fillingLookup(table: records.lookup))
            if wholeTree {
                try copies.fillLookup(of: records, isDistributed: distributed)
            } else {
                try copies.settleLookup(of: records, ofKeys: keys)
            }
            if records == .posts, settlesLikes {
                onStep(.settlingLikes)
                try copies.settleLikeOwners(ofKeys: keys, isDistributed: distributed)
            }
        }
    }

}

/// What a long import tells its caller as it goes, and asks: the rejects, the rows so far, the steps after the
/// reading, and whether to stop.
struct ImportObserver {
    /// Hears each reject.
    var onReject: (ImportReject) throws -> Void
    /// Hears the rows loaded so far, every few thousand.
    var onRows: (Int) -> Void
    /// Asked every few thousand rows; true stops the import with a cancellation error.
    var isCancelled: @Sendable () -> Bool
    /// Hears each step after the reading.
    var onStep: (ImportStep) -> Void
}
