import FirebaseTree
import Foundation
internal import PostgresClient

/// `sync`: the store brought to a newer export by writing only what differs, in one transaction that holds row
/// locks only.
///
/// One REPEATABLE READ transaction: the tables are locked in ROW EXCLUSIVE mode (what the app's writes take, so
/// readers and the app's writes go on; a merge or a write verb waits), then the source is compared with the
/// store's export from the transaction's snapshot (`TreeComparison` with rewrites, the export on a thread of
/// its own as `verify` runs it, its helpers on other sessions in the same snapshot), the nodes to write are
/// planned in temporary files (`SyncPlan`), and only then written: their rows deleted, the plan's document loaded as import loads a file, and the kept copies of the
/// posts and chats it touched settled. A row that another session changed after the snapshot cannot be
/// rewritten without losing that change, and PostgreSQL refuses it (a serialization failure): the sync then
/// rolls back whole and says so.
struct TreeSync {
    /// The connection that compares and writes.
    let connection: StoreConnection
    /// The lookups and like owners a sync settles.
    let copies: DerivedCopies
    /// Held for the session around the sync, so that no check, repair, import or other sync runs meanwhile.
    let maintenance: MaintenanceLock
    /// The store's side of the comparison.
    let verification: Verification
    /// The rows a rewritten node replaces.
    let treeRows: TreeRows
    /// Whether the tables are on Citus, where likes find their owners another way.
    let distribution: Distribution

    /// The import engine a sync writes through, on its connection.
    private var imports: TreeImport {
        TreeImport(
            connection: connection, copies: copies, maintenance: maintenance, distribution: distribution,
            export: verification.export, treeRows: treeRows)
    }

    /// Paths whose rows are deleted per batch of statements.
    private static let deletionBatch = 500
    /// On Citus, the fewest paths deleted by one statement per table rather than statements per path: a path's
    /// two statements go to one shard each (0.3 ms apiece on a local cluster), a batch's to every shard
    /// (20-40 ms).
    private static let distributedBatchFloor = 64

    /// `Store.sync`: see there.
    func sync(
        opening open: () throws -> any ByteSource, options: SyncOptions, observer: SyncObserver = SyncObserver()
    ) throws -> SyncReport {
        for key in options.at {
            if let problem = FirebaseKey.problem(withNodeKey: key) {
                throw StorageError(.invalidValue, "cannot sync at \"\(key)\": not a Firebase key: \(problem)")
            }
        }
        let clock = ContinuousClock()
        let started = clock.now
        // Before the transaction: a wait for another maintenance command must leave no snapshot behind.
        try maintenance.take(wait: options.wait, scope: .session)
        defer {
            if connection.isConnected, !connection.isInTransaction { try? maintenance.releaseSession() }
        }
        var report = SyncReport()
        do {
            try syncInTransaction(opening: open, options: options, into: &report, observer: observer)
        } catch let error as StorageError where error.sqlState == .serializationFailure {
            // Its snapshot is older than another session's change to a row it rewrites: writing would lose it.
            throw StorageError(
                .server, "another session changed rows this sync rewrites after the sync began",
                sqlState: error.sqlState, detail: error.message,
                hint: "Nothing was changed. Run the sync again: it starts from the store as it is then.")
        }
        report.isDryRun = options.isDryRun
        report.seconds = (clock.now - started).seconds
        return report
    }

    /// The sync's transaction: locks, comparison, writes; on Citus, again after a wait for the tables.
    private func syncInTransaction(
        opening open: () throws -> any ByteSource, options: SyncOptions, into report: inout SyncReport,
        observer: SyncObserver
    ) throws {
        let clock = ContinuousClock()
        let started = clock.now
        let cluster = try ClusterSnapshot.ifDistributed(on: connection)
        var firstRefusal: ContinuousClock.Instant?
        while true {
            var tables = TableLock.notYet
            do {
                try runTransaction(
                    tables: &tables, cluster: cluster, opening: open, options: options, into: &report,
                    observer: observer, clock: clock, started: started)
                return
            } catch let error as StorageError where tables == .asked && error.isLockRefusal {
                // Another transaction holds the tables (a root write, VACUUM FULL): wait for it without the barrier,
                // which its commit would wait for, then take the snapshot behind the barrier again.
                guard let cluster else { throw error }
                try cluster.waitForTables(
                    ["SET LOCAL lock_timeout = 0", Self.treeLock], readOnly: false, timeout: "0", since: &firstRefusal)
            }
        }
    }

    /// Takes ROW EXCLUSIVE on the tree's tables: what the app's writes take, so that they go on.
    private static let treeLock: Query = "LOCK TABLE \(TreeTable.lockList) IN ROW EXCLUSIVE MODE"
    /// `treeLock`, failing at once where a lock is held against it.
    private static let treeLockNoWait: Query = "LOCK TABLE \(TreeTable.lockList) IN ROW EXCLUSIVE MODE NOWAIT"

    /// How far a transaction got with the lock on the tree's tables.
    private enum TableLock { case notYet, asked, held }

    /// The sync's transaction. On Citus it takes the tables' lock without waiting, behind the barrier of `cluster`
    /// (see `ClusterSnapshot`), and `tables` says whether that was what failed.
    private func runTransaction(
        tables: inout TableLock, cluster: ClusterSnapshot?, opening open: () throws -> any ByteSource,
        options: SyncOptions, into report: inout SyncReport, observer: SyncObserver, clock: ContinuousClock,
        started: ContinuousClock.Instant
    ) throws {
        try connection.withTransaction(isolation: .repeatableRead, rollback: options.isDryRun) {
            // Utility statements, which take no snapshot: the snapshot comes after the locks.
            try connection.execute("SET LOCAL lock_timeout = 0")
            try connection.execute(StoreConnection.namingSync)
            if let cluster {
                try cluster.take {
                    tables = .asked
                    try connection.execute(Self.treeLockNoWait)
                }
            } else {
                try connection.execute(Self.treeLock)
            }
            tables = .held
            let heldSomething = try !treeRows.isEmpty()
            try compressFullPageImages()
            observer.onStep(.comparing)
            let rejects = RejectLedger(onReject: observer.onReject)
            // Exported here, outside the comparison's savepoint and before anything is written: the export's
            // helpers read in it, on other sessions.
            let shared = options.at.isEmpty ? try verification.export.sharedSnapshot() : nil
            let plan = try compare(opening: open, options: options, sharing: shared, rejects: rejects, into: &report)
            report.comparingSeconds = (clock.now - started).seconds
            guard plan.pathCount > 0 else { return }
            if plan.removesItsNode, !options.at.isEmpty, !options.allowsEmptying {
                throw TreeImport.emptyingRefused(at: options.at, everyValueRejected: report.rejectCount > 0)
            }
            let writing = clock.now
            if !options.at.isEmpty, try treeRows.recordPath(holding: options.at) != nil {
                // Inside a record, which is one row: written as `import --at` writes there, the record read,
                // changed and stored again.
                try writeInsideRecord(opening: open, options: options, into: &report, onReject: observer.onReject)
            } else {
                try write(plan, options: options, into: &report, rejects: rejects, observer: observer)
            }
            if heldSomething, !options.allowsEmptying, try treeRows.isEmpty() {
                let error = StorageError(
                    .refused, "the source holds nothing: syncing the store with it would delete everything there",
                    hint: "Nothing was changed. If emptying the store is what you want, allow it.")
                throw error.remedied(.allowEmptying)
            }
            report.writingSeconds = (clock.now - writing).seconds
        }
    }

    /// Compresses the full-page images of the transaction's WAL when the server compresses none and the role
    /// may say so (`wal_compression` is a superuser's setting): the first change to a page after a checkpoint
    /// logs the whole page, which is most of a small sync's WAL (38 of 40 MB for 1 % of a 202 MB store; 16 MB
    /// with lz4), and of what replicas are sent.
    private func compressFullPageImages() throws {
        let row = try connection.query(
            """
            SELECT current_setting('is_superuser') = 'on' AND current_setting('wal_compression') = 'off',
                coalesce((SELECT 'lz4' = ANY (enumvals) FROM pg_settings WHERE name = 'wal_compression'), false)
            """)[0]
        guard try row.decode(Bool.self, at: 0) else { return }
        try connection.execute(
            try row.decode(Bool.self, at: 1) ? "SET LOCAL wal_compression = lz4" : "SET LOCAL wal_compression = pglz")
    }

    // MARK: Comparing

    /// Compares the source with the store's export, counting and listing the differences in `report` and
    /// planning the nodes to write; a source out of RTDB order is sorted first and compared again afresh.
    private func compare(
        opening open: () throws -> any ByteSource, options: SyncOptions, sharing shared: Query?,
        rejects: RejectLedger, into report: inout SyncReport
    ) throws -> SyncPlan {
        let pass = try verification.comparing(
            opening: open, sortingFirst: options.sortingFirst, temporaryDirectory: options.temporaryDirectory
        ) { source in
            var found = SyncReport()
            var listing = DifferenceListing(limit: options.maxListed)
            let plan = try SyncPlan(temporaryDirectory: options.temporaryDirectory)
            let rewrites = TreeComparison.Rewrites(
                isRecordPath: { TreeImporter.storesRecord(at: $0) }, recordRule: { TreeImporter.recordRule(at: $0) },
                temporaryDirectory: options.temporaryDirectory,
                onRewrite: { path, json in try plan.rewrite(path, json: json, isItsNode: path.count == options.at.count)
                })
            var counted: TreeDifference.Group?
            var comparison = TreeComparison(rewrites: rewrites) { difference in
                try Self.count(
                    difference, in: &found, listing: &listing, counted: &counted, options: options, rejects: rejects)
            }
            comparison.topLevel = options.topLevel
            // A savepoint: a pass given up for a source out of order leaves its export's statement failed. The
            // tree error comes out as it is, for the caller to sort the source.
            var bytes = (source: 0, store: 0, sessions: 1)
            var treeError: TreeError?
            do {
                try connection.withTransaction {
                    do {
                        bytes = try verification.compare(source, with: &comparison, at: options.at, sharing: shared)
                    } catch let error as TreeError {
                        treeError = error
                        throw error
                    }
                }
            } catch {
                throw treeError ?? error
            }
            try plan.finish()
            found.differences = listing.differences
            found.isListCutForMemory = listing.isCutForMemory
            found.nodesCompared = comparison.nodesCompared
            found.sourceBytes = bytes.source
            found.storeSessions = bytes.sessions
            found.rewrites = plan.pathCount
            return (found, plan)
        }
        report = pass.result.0
        report.sourceBytes = pass.sortedBytes ?? report.sourceBytes
        report.sortedBecause = pass.sortedBecause
        return pass.result.1
    }

    /// Counts a difference under its node, lists it if there is room, and hands a reject over
    /// (aborting once more than allowed were met). The parts of one difference verify reports as one (`group`,
    /// the last counted in `counted`) count once, as its last part names it; each is listed, being a write.
    private static func count(
        _ difference: TreeDifference, in report: inout SyncReport, listing: inout DifferenceListing,
        counted: inout TreeDifference.Group?, options: SyncOptions, rejects: RejectLedger
    ) throws {
        let node = report.node(nodeName(of: difference.path))
        func add(_ kind: TreeDifference.Kind, _ amount: Int) {
            report.counts[kind, default: 0] += amount
            switch kind {
            case .missing: report.nodes[node].added += amount
            case .changed: report.nodes[node].changed += amount
            case .extra: report.nodes[node].removed += amount
            case .rejected: report.nodes[node].rejected += amount
            }
        }
        if let group = difference.group, let previous = counted, previous.path == group.path {
            if previous.kind != group.kind {
                add(previous.kind, -1)
                add(group.kind, 1)
                counted = group
            }
        } else {
            add(difference.group?.kind ?? difference.kind, 1)
            counted = difference.group ?? counted
        }
        var listed = difference
        // A missing node's value is whole (it is what is written): the list keeps what verify's keeps.
        if let source = listed.source, source.utf8.count > valueLimit {
            listed.source = FirebaseKey.shortened(source, toBytes: valueLimit)
            listed.isCut = true
        }
        listing.add(listed, under: Array(difference.path.prefix(options.at.count + 1)))
        guard difference.kind == .rejected else { return }
        let reject = ImportReject(
            path: "/" + difference.path.joined(separator: "/"), reason: difference.reason ?? "refused by import",
            value: difference.source ?? "null", isTruncated: difference.isCut)
        report.rejectCount += 1
        if report.rejects.count < ImportReport.rejectsKept { report.rejects.append(reject.cut(to: 4096)) }
        try rejects.handOver(reject)
        guard report.rejectCount > options.maximumRejects else { return }
        throw tooManyRejects(reject, allowed: options.maximumRejects)
    }

    /// The error of a sync that met more rejects than `allowed`, the last being `reject`.
    private static func tooManyRejects(_ reject: ImportReject, allowed: Int) -> StorageError {
        let error = StorageError(
            .malformedInput, "rejected \(reject.path): \(reject.reason)",
            hint: allowed == 0
                ? "Allowing rejected values lets them through (they are listed and handed to the reject handler)."
                : "More than the \(allowed) allowed values were rejected.",
            context: "reading \(reject.path)")
        return error.remedied(.allowRejects(allowed: allowed))
    }

    /// The bytes of a listed difference's value, as verify keeps them.
    private static let valueLimit = 1 << 20

    /// A path's top-level node as import's report names it.
    static func nodeName(of path: [String]) -> String {
        path.first.map(TreeImporter.reportedNode) ?? "/"
    }

    // MARK: Writing

    /// Writes the source, the node at `options.at` inside a stored record, as `import --at` does (the record read,
    /// changed in memory and stored again), in the sync's transaction.
    private func writeInsideRecord(
        opening open: () throws -> any ByteSource, options: SyncOptions, into report: inout SyncReport,
        onReject: @escaping (ImportReject) throws -> Void
    ) throws {
        let imported = try imports.importTree(
            from: try open(),
            options: ImportOptions(
                mode: .replace, maximumRejects: options.maximumRejects, at: options.at,
                allowsEmptying: options.allowsEmptying),
            observer: ImportObserver(onReject: onReject))
        let node = report.node(Self.nodeName(of: options.at))
        report.nodes[node].rowsWritten += imported.rowsImported
        report.nodes[node].rowsDeleted += imported.rowsReplaced
    }

    /// Deletes the rows of every planned path, loads the plan's document, and settles the kept copies.
    private func write(
        _ plan: SyncPlan, options: SyncOptions, into report: inout SyncReport, rejects: RejectLedger,
        observer: SyncObserver
    ) throws {
        observer.onStep(.deleting)
        let kept = try KeptCopies(copies: copies, touching: plan.touched)
        // Citus is given a statement per path when a batch has few, whose keys route it to one shard; a
        // statement over a batch asks every shard (and writes every node's copy of unmapped_values, a reference
        // table), which only many paths repay.
        let isDistributed = try distribution.isDistributed()
        try plan.forEachPaths(batch: Self.deletionBatch) { paths in
            if observer.isCancelled() {
                throw StorageError.cancelledByUser
            }
            var deleted: [String: Int] = [:]  // by node name
            if paths.contains(where: \.isEmpty) {
                // The whole tree goes (row by row: TRUNCATE would lock readers out).
                for table in TreeTable.allCases {
                    deleted[TreeImporter.reportedNode(table.rootKey ?? ""), default: 0] += try connection.execute(
                        "DELETE FROM \(identifier: table.name)")
                }
            } else if isDistributed, paths.count < Self.distributedBatchFloor {
                for path in paths {
                    deleted[Self.nodeName(of: path), default: 0] += try treeRows.deleteRows(under: path).values.reduce(
                        0, +)
                }
            } else {
                for (root, count) in try treeRows.deleteRows(underAll: paths) {
                    deleted[Self.nodeName(of: [root]), default: 0] += count
                }
            }
            for (node, count) in deleted where count > 0 {
                report.nodes[report.node(node)].rowsDeleted += count
            }
        }
        observer.onStep(.loading)
        var importOptions = ImportOptions(mode: .merge, maximumRejects: .max, allowsEmptying: true)
        importOptions.namedChildren = .deletedByCaller
        let rejectedBefore = report.rejectCount
        var rejected: [ImportReject] = []
        let onReject = { (reject: ImportReject) in
            // A record is written from its text, rejects and all: import leaves out what the comparison
            // counted already, and anything it refuses besides is a reject too.
            guard !rejects.wasHandedOver(reject) else { return }
            rejected.append(reject)
            try rejects.handOver(reject)
            guard rejectedBefore + rejected.count > options.maximumRejects else { return }
            throw Self.tooManyRejects(reject, allowed: options.maximumRejects)
        }
        // The plan names each node once, in order, and its rows are gone already.
        let load = TreeLoad(
            plan.documentSource, options: importOptions, on: imports.target, findings: .neverMet, onReject: onReject)
        load.loader.isCancelled = observer.isCancelled
        let loaded = try load.run()
        report.rejectCount += rejected.count
        report.rejects += rejected.prefix(max(0, ImportReport.rejectsKept - report.rejects.count)).map {
            $0.cut(to: 4096)
        }
        for line in loaded.lines {
            report.nodes[report.node(line.node)].rowsWritten += line.rowsImported
        }
        observer.onStep(.settling)
        // A child of /posts written inside (records written one by one) is as its children say, which an earlier
        // version may not have stored it as.
        try imports.restoreMisshapenPosts(among: plan.postsWrittenInside.map { $0.map(\.string).sorted() })
        try kept.settle(stagedLikes: load.stagedLikes, isDistributed: isDistributed)
    }
}

/// The rejects a sync handed to its caller, by path: a source compared twice (sorted after a first pass met keys
/// out of order) and a record written from its text meet some of them again, and each goes out once.
final class RejectLedger {
    private let onReject: (ImportReject) throws -> Void
    private var paths: Set<TreeKey> = []

    init(onReject: @escaping (ImportReject) throws -> Void) {
        self.onReject = onReject
    }

    /// Whether a reject at the same path went out already.
    func wasHandedOver(_ reject: ImportReject) -> Bool { paths.contains(TreeKey(reject.path)) }

    /// Hands `reject` to the caller unless one at its path went out already.
    func handOver(_ reject: ImportReject) throws {
        guard paths.insert(TreeKey(reject.path)).inserted else { return }
        try onReject(reject)
    }
}

/// What a sync is doing, for a progress display.
public enum SyncStep: Sendable, Equatable {
    /// Comparing the source with the store.
    case comparing
    /// Deleting the rows of the nodes that go or are rewritten.
    case deleting
    /// Storing the rewritten nodes.
    case loading
    /// Settling the lookups and likes of the posts and chats it touched.
    case settling

    /// The step as a progress bar shows it.
    public var description: String {
        switch self {
        case .comparing: "comparing"
        case .deleting: "deleting what goes"
        case .loading: "writing what changed"
        case .settling: "settling likes and lookups"
        }
    }
}
