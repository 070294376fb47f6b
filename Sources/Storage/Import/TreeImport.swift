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
        if options.at.count > 1,
            var report = try importIntoRecord(from: source, options: options, onReject: onReject)
        {
            report.seconds = (clock.now - started).seconds
            return report
        }
        var report = ImportReport()
        let finishing = FinishingClock()
        let timedStep: (ImportStep) -> Void = { step in
            finishing.begin(step)
            onStep(step)
        }
        let wholeTree = options.mode == .replace && options.at.isEmpty
        var replaced = 0
        var analyzesAfterCommit = false
        var cancelledSessions: [Int] = []
        var helpers: HelperSessions?
        // Inside a caller's transaction the import commits nothing: that transaction's commit is its caller's.
        let commits = wholeTree && !options.isDryRun && !connection.isInTransaction
        do {
            try connection.withTransaction(rollback: options.isDryRun) {
                try connection.execute(
                    """
                    SELECT set_config('lock_timeout', '0', true),
                        set_config('application_name', \(StoreConnection.importApplicationName), true)
                    """)
                let start =
                    try wholeTree ? beginWholeTree(options, reopening, isCancelled, onReject) : beginNode(options)
                let deferredIndexes = start.deferredIndexes
                helpers = start.helpers
                // What the store derives from /posts and /chats follows what the import does to them.
                var heldBefore: [String: [String]?] = [:]
                for records in HeldRecords.all where !wholeTree {
                    heldBefore[records.table] = try copies.heldKeys(of: records, touchedAt: options.at)
                }
                var deletedRoots: Set<String> = []
                if !options.at.isEmpty {
                    if options.mode == .replace {
                        replaced = try treeRows.deleteRows(under: options.at).values.reduce(0, +)
                    }
                }
                if options.mode == .merge, case .deletedFirst(let children) = options.namedChildren {
                    replaced = try treeRows.deleteRows(underAll: children.map { options.at + [$0] }).values.reduce(0, +)
                    if options.at.isEmpty { deletedRoots.formUnion(children) }
                }
                // A like's owner is its post's, and in an export /postLikes comes before /posts: likes are staged
                // until the whole file is read. COPY FREEZE needs tables truncated (or created) in the same
                // transaction.
                let loader = TableLoader(
                    connection: connection, usesFreeze: wholeTree,
                    destinations: [
                        .postLikes: .init(
                            table: DerivedCopies.stagedLikesTable, create: { [copies] in try copies.stageLikes() })
                    ])
                let reshape = PostsReshape(export: export, treeRows: treeRows)
                // With other sessions loading the file, this one only takes their tables over.
                let importer =
                    helpers != nil
                    ? nil
                    : TreeImporter(
                        source: source, loader: loader, options: options,
                        onFinding: { finding in
                            if reshape.note(finding) { return [:] }
                            // A merge names each node it replaces, `null` ones included.
                            if let root = finding.path.first { deletedRoots.insert(root) }
                            defer { finishing.end() }
                            return try Self.deleteRows(
                                under: finding.path, loader: loader, indexes: deferredIndexes,
                                treeRows: treeRows, copies: copies, onStep: timedStep)
                        },
                        onReject: onReject)
                loader.onRows = onRows
                loader.isCancelled = isCancelled
                // A whole-tree import reads the likes last, with their owners, when it can read the file again
                // (and fails at its first reject: with rejects let through, they are counted in file order).
                let likes =
                    wholeTree && options.maximumRejects == 0
                    ? reopening.map { LikesAfterPosts(reopening: $0, options: options, onReject: onReject) } : nil
                if likes != nil { importer?.deferredKey = LikesAfterPosts.key }
                // The importer whose reading failed, for the error's context.
                var reading = importer
                // With other sessions: the tables they gathered statistics for.
                var analyzed: Set<String> = []
                var stagedLikes = false
                var helperOutcomes: [HelperImport.Outcome] = []
                do {
                    if let importer {
                        (report, stagedLikes) = try read(
                            importer, loader: loader, likes: likes, indexes: deferredIndexes, reshape: reshape,
                            onReject: onReject, onRows: onRows, isCancelled: isCancelled, onStep: timedStep,
                            announce: onStep, reading: &reading)
                    } else if let helpers, let sideTables = start.sideTables {
                        var pacing = source
                        // Shown, not timed here: each session times its own steps.
                        let outcomes = try helpers.finishLoading(pacing: &pacing, onRows: onRows, onStep: onStep)
                        let taken = try helpers.takeOver(outcomes, into: sideTables, on: connection)
                        analyzed = taken.analyzed
                        deferredIndexes?.markBuilt(tables: taken.indexed)
                        helperOutcomes = outcomes
                    }
                    try settleDerivedRows(
                        staged: stagedLikes, wholeTree: wholeTree,
                        written: deletedRoots.union(options.at.prefix(1)), before: heldBefore, at: options.at,
                        filledLookups: Set(helperOutcomes.flatMap(\.lookups)), isDistributed: start.isDistributed,
                        onStep: timedStep)
                    // Those of the tables the sessions built are marked built (`markBuilt` above).
                    try deferredIndexes?.build(onStep: timedStep)
                    if wholeTree, !options.isDryRun {
                        // Citus cannot ANALYZE a table whose shards this transaction wrote: after the commit, there.
                        if start.isDistributed == true {
                            analyzesAfterCommit = true
                        } else {
                            try analyzeTables(except: analyzed, onStep: timedStep)
                        }
                    }
                    if let sideTables = start.sideTables, !options.isDryRun {
                        timedStep(.switching)
                        cancelledSessions = try sideTables.switchIn(isCancelled: isCancelled)
                    }
                    finishing.end()
                } catch let error as StorageError {
                    loader.abort()
                    // A helper's failure says how far it read itself.
                    guard let reading else { throw error }
                    throw error.adding(
                        context: options.isWrite
                            ? "write rolled back" : "import rolled back after reading \(reading.bytesRead) bytes")
                } catch {
                    loader.abort()
                    throw error
                }
                if importer == nil {
                    report = .combining(helperOutcomes.map(\.report), nodes: helpers?.shares.reportedNodesInOrder ?? [])
                }
                report.readersLockedOut = start.readersLockedOut
                report.sessions = helpers?.helpers.count ?? 1
                if let warning = start.fewerSessions { report.add(warning) }
                for pid in cancelledSessions { report.add(Self.cancelledSessionWarning(pid)) }
                if options.mode == .merge, options.at.isEmpty, let warning = try misplacedMergeWarning(deletedRoots) {
                    report.add(warning)
                }
                if !options.at.isEmpty, report.rowsImported > 0 {
                    // Something was written below the leaves at the path's ancestors (and, for a merge, at the path):
                    // Firebase replaced them; left here, they would come back once what hides them is removed.
                    let leaves = options.mode == .merge ? options.at : Array(options.at.dropLast())
                    replaced += try treeRows.deleteLeaves(atAndAbove: leaves)
                }
                // Written inside a child of /posts (or some of its children merged): its shape is its children's,
                // which this import saw only some of.
                if options.at.count >= (options.mode == .merge ? 2 : 3), options.at[0] == TreeTable.feedPosts.rootKey {
                    try restoreMisshapenPosts(among: [options.at[1]])
                }
                report.rowsReplaced += replaced
                report.finishing = finishing.steps
                report.addFinishing(
                    of: helperOutcomes, analyzedHere: Set(Store.treeTables + Store.lookupTables).subtracting(analyzed),
                    indexedHere: deferredIndexes?.built ?? [])
                if options.mode == .replace, !options.allowsEmptying, report.rowsImported == 0,
                    start.heldSomething || replaced > 0
                {
                    throw Self.emptyingRefused(at: options.at, everyValueRejected: report.rejectCount > 0)
                }
                // Releasing the files of what it replaced takes the commit seconds on a large store: shown and
                // timed, so that a progress display does not sit on the switch meanwhile.
                if commits { timedStep(.committing) }
            }
        } catch {
            // Sessions still loading roll back; the schemas of those that committed their tables are dropped here
            // (or, if the server is gone too, by the next import).
            if !connection.isInTransaction { helpers?.abandon(on: connection) }
            throw error
        }
        finishing.end()
        if let commit = finishing.steps.last, commit.target == ImportReport.Finishing.commit {
            report.finishing.append(commit)
        }
        // Inside a write's transaction nothing is committed yet, and a failed statement would abort it: the
        // statistics are left to autovacuum there.
        if analyzesAfterCommit, !connection.isInTransaction {
            // The rows are committed: a failure here is a warning, not a failed import.
            do {
                try analyzeDistributedTables(onStep: timedStep)
            } catch let error as StorageError {
                report.add(
                    ImportWarning(path: "/", message: "the import committed, but ANALYZE failed: \(error.message)"))
            }
            finishing.end()
            report.finishing = finishing.steps
        }
        report.seconds = (clock.now - started).seconds
        report.isDryRun = options.isDryRun
        report.mode = options.mode
        return report
    }

    /// How an import holds the store before it reads its file.
    private struct Start {
        /// Whether the store held any row of the tree (a replace that empties it needs leave).
        var heldSomething = false
        /// The indexes built after the rows.
        var deferredIndexes: DeferredIndexes?
        /// The twins a whole-tree import fills beside the store, nil when it locks readers out.
        var sideTables: SideTables?
        /// The other sessions that load the file.
        var helpers: HelperSessions?
        /// Why a whole-tree import locks readers out (`ImportReport.readersLockedOut`).
        var readersLockedOut: String?
        /// Why fewer sessions load than were asked for, as a warning of the report.
        var fewerSessions: ImportWarning?
        /// Whether the store is distributed (Citus), asked once by a whole-tree import; nil for the others.
        var isDistributed: Bool?
    }

    /// Reads the file with the import's one session: `importer`, then, when `likes` reads them after the rest,
    /// the likes it skipped. Returns the report and whether likes were staged (to be joined with the posts);
    /// `reading` is the importer whose reading failed, when one did.
    private func read(
        _ importer: TreeImporter, loader: TableLoader, likes: LikesAfterPosts?, indexes: DeferredIndexes?,
        reshape: PostsReshape, onReject: @escaping (ImportReject) throws -> Void, onRows: @escaping (Int) -> Void,
        isCancelled: @escaping @Sendable () -> Bool, onStep: @escaping (ImportStep) -> Void,
        announce: (ImportStep) -> Void, reading: inout TreeImporter?
    ) throws -> (report: ImportReport, stagedLikes: Bool) {
        do {
            try importer.load()
            // Before the likes, whose owners are the posts' as they are stored.
            try Self.reshape(reshape, importer: importer, loader: loader, onReject: onReject) { path in
                try Self.deleteRows(
                    under: path, loader: loader, indexes: indexes, treeRows: treeRows, copies: copies, onStep: onStep)
            }
        } catch {
            // The likes it skipped come before where it failed: a failure of theirs is the import's.
            if let likes, let nodes = importer.deferred,
                let (checker, checking) = try? likes.checkingImporter(of: nodes)
            {
                checking.isCancelled = isCancelled
                do {
                    try checker.load()
                } catch let earlier {
                    reading = checker
                    throw earlier
                }
            }
            throw error
        }
        guard let likes, let nodes = importer.deferred else {
            return (importer.report, loader.redirected.contains(.postLikes))
        }
        // The file's bytes are all read by now: a progress display says what the rows still counting are.
        announce(.readingAgain(key: LikesAfterPosts.key))
        let (likesImporter, likesLoader) = try likes.loadingImporter(
            of: nodes, posts: loader.counts[TreeTable.posts.rawValue].rows, on: connection,
            indexes: indexes, treeRows: treeRows, copies: copies, onStep: onStep)
        let rowsBefore = loader.totalRows
        likesLoader.onRows = { onRows(rowsBefore + $0) }
        likesLoader.isCancelled = isCancelled
        do {
            try likesImporter.load()
        } catch {
            reading = likesImporter
            throw error
        }
        return (
            .combining([importer.report, likesImporter.report], nodes: importer.reportedNodes),
            likesLoader.redirected.contains(.postLikes)
        )
    }

    /// A whole-tree import's start: the maintenance lock first, so that checks and repairs see an import running
    /// (and fail at once or queue with --wait) instead of blocking on the tables, and whole-tree imports never
    /// meet on the tables' locks. Then twins beside the store that readers go on reading, with sessions of their
    /// own when the file can be read again; or, where a switch cannot carry what the tables hold, the tables
    /// emptied under a lock that keeps readers out.
    private func beginWholeTree(
        _ options: ImportOptions, _ reopening: (@Sendable () throws -> any ByteSource)?,
        _ isCancelled: @escaping @Sendable () -> Bool, _ onReject: @escaping (ImportReject) throws -> Void
    ) throws -> Start {
        try maintenance.takeWaiting()
        var start = Start()
        let distributed = try distribution.isDistributed()
        start.isDistributed = distributed
        switch try SideTables.plan(on: connection, isDistributed: distributed) {
        case .success(let plan):
            // On Citus the twins come before any statement over many shards (`SideTables.create`).
            func makeTwins() throws {
                _ = try SideTables.dropLeftovers(on: connection)
                start.deferredIndexes = try plan.create(keepsIndexes: options.keepsIndexes)
            }
            if distributed { try makeTwins() }
            // Writers wait for the import; readers read the store as it was until the switch.
            try connection.execute("LOCK TABLE \(Store.treeTableList) IN EXCLUSIVE MODE")
            try maintenance.welcomeReaders()
            start.heldSomething = try !treeRows.isEmpty()
            if !distributed { try makeTwins() }
            try plan.redirectWrites()
            start.sideTables = plan
            let asked = options.jobs ?? Store.defaultJobs
            if let reason = Self.oneSessionReason(options, canReopen: reopening != nil, isDistributed: distributed) {
                start.fewerSessions = Self.oneSessionWarning(asked: options.jobs, because: reason)
            } else if asked > 1, let reopening {
                let room = try connectionsLeft()
                let jobs = max(1, min(asked, room - 1))
                if jobs < asked {
                    let loaded = jobs == 1 ? "the import's own session loaded alone" : "\(jobs) loaded"
                    start.fewerSessions = ImportWarning(
                        path: "/",
                        message: "\(asked) loading sessions were asked for, but the server had room for "
                            + "\(max(0, room)) more connection\(room == 1 ? "" : "s") (its connection limits): "
                            + "\(loaded), leaving one for whoever connects next")
                }
                if jobs > 1 {
                    start.helpers = HelperSessions(
                        count: jobs, indexCount: start.deferredIndexes?.count ?? 0,
                        opening: connection.siblingOpener(), reopening: reopening, options: options,
                        isCancelled: isCancelled, onReject: onReject)
                }
            }
        case .failure(let obstacle):
            start.readersLockedOut = obstacle.reason
            start.fewerSessions = Self.oneSessionWarning(
                asked: options.jobs, because: "the tables could not be filled beside the store's (\(obstacle.reason))")
            // The lock TRUNCATE takes, before anything reads the tables.
            try connection.execute("LOCK TABLE \(Store.treeTableList) IN ACCESS EXCLUSIVE MODE")
            start.heldSomething = try !treeRows.isEmpty()
            try connection.execute("TRUNCATE \(Store.treeTableList)")
            if !options.keepsIndexes { start.deferredIndexes = try deferIndexes(isDistributed: distributed) }
        }
        return start
    }

    /// Why a whole-tree import loads on its own session whatever `--jobs` asked, or nil when helpers may load.
    private static func oneSessionReason(_ options: ImportOptions, canReopen: Bool, isDistributed: Bool) -> String? {
        // Helpers' twins, committed apart, could not be placed beside the import's.
        if isDistributed { return "the store is distributed (Citus), whose tables one session fills" }
        if options.isDryRun { return "a dry run loads on one session" }
        if options.maximumRejects > 0 { return "an import that lets rejects through loads on one session" }
        if !canReopen { return "the input cannot be read again from its start (standard input, a pipe)" }
        return nil
    }

    /// The warning that `asked` loading sessions were asked for and one loaded, or nil when none were asked for
    /// (the default of one a core says nothing when it cannot apply).
    private static func oneSessionWarning(asked: Int?, because reason: String) -> ImportWarning? {
        guard let asked, asked > 1 else { return nil }
        return ImportWarning(
            path: "/", message: "\(asked) loading sessions were asked for, but one loaded: \(reason)")
    }

    /// How many more connections the server accepts for this role in this database (the least of the server's,
    /// the database's and the role's limits, as a role that is not a superuser meets them): more loading
    /// sessions than that would fail the import at a connection refused.
    private func connectionsLeft() throws -> Int {
        try connection.query(
            """
            WITH here AS (
                SELECT count(*)::int AS server,
                    count(*) FILTER (WHERE datname = current_database())::int AS database,
                    count(*) FILTER (WHERE usename = current_user)::int AS role
                FROM pg_stat_activity WHERE backend_type = 'client backend')
            SELECT least(
                current_setting('max_connections')::int - current_setting('superuser_reserved_connections')::int
                    - coalesce(current_setting('reserved_connections', true)::int, 0) - here.server,
                (SELECT nullif(greatest(datconnlimit, -1), -1) FROM pg_database WHERE datname = current_database())
                    - here.database,
                (SELECT nullif(greatest(rolconnlimit, -1), -1) FROM pg_roles WHERE rolname = current_user) - here.role)
            FROM here
            """)[0].decode(Int.self, at: 0)
    }

    /// A merge's or a node's start: the tree's tables locked against writes.
    private func beginNode(_ options: ImportOptions) throws -> Start {
        try treeRows.lockTree()
        var start = Start()
        start.fewerSessions = Self.oneSessionWarning(
            asked: options.jobs, because: "only a replace of the whole store loads on several sessions")
        return start
    }

    /// The warning for a session whose statement the switch cancelled.
    private static func cancelledSessionWarning(_ pid: Int) -> ImportWarning {
        ImportWarning(
            path: "/",
            message: "cancelled the statement of session \(pid): its transaction had read the tables before the "
                + "import and then waited to write them, which kept the import from switching")
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

    /// A warning when a merge of the whole tree wrote top-level nodes that look like an export of one node: none
    /// of the file's keys is one of the app's nodes, and each (of the first five) is already a child of one of
    /// them, as after `export users.json --path /users` then `import users.json --mode merge` without `--at`.
    private func misplacedMergeWarning(_ keys: Set<String>) throws -> ImportWarning? {
        let roots = Set(TreeTable.allCases.compactMap(\.rootKey))
        guard !keys.isEmpty, keys.isDisjoint(with: roots) else { return nil }
        let sample = keys.sorted(by: FirebaseKey.precedes).prefix(5)
        for root in roots.sorted() {
            let isChild = try sample.allSatisfy { key in
                try export.childKeys(of: [root], startingWith: key, limit: 1).contains { FirebaseKey.same($0, key) }
            }
            guard isChild else { continue }
            let named = sample.joined(separator: ", ") + (keys.count > sample.count ? ", …" : "")
            return ImportWarning(
                path: "/",
                message: "the file's top-level keys (\(named)) are children of /\(root) too: if it is an export of "
                    + "/\(root), this merge wrote them at the top level; merge it with --at /\(root)")
        }
        return nil
    }

    /// An import at a path inside a stored record (`--at /posts/UID/KEY/poster`): the record is read, changed in
    /// memory as `write` changes it, and stored again, so it stays one row. Nil when no record holds the path.
    /// The file is read whole, as a write's JSON is; one larger than `recordFileLimit` is refused.
    private func importIntoRecord(
        from source: some ByteSource, options: ImportOptions, onReject: @escaping (ImportReject) throws -> Void
    ) throws -> ImportReport? {
        try StorageError.converting {
            try connection.withTransaction(rollback: options.isDryRun) {
                try treeRows.lockTree()
                // A merge at a record's own path changes some of its fields: a rewrite too.
                guard let record = try treeRows.recordPath(holding: options.at, orIs: options.mode == .merge) else {
                    return nil
                }
                var source = source
                var bytes: [UInt8] = []
                var buffer = [UInt8](repeating: 0, count: 1 << 16)
                while case let count = try buffer.withUnsafeMutableBytes({ try source.read(into: $0) }), count > 0 {
                    bytes += buffer[..<count]
                    guard bytes.count <= Self.recordFileLimit else {
                        let error = StorageError(
                            .invalidValue,
                            "cannot import at /\(options.at.joined(separator: "/")): it lies inside the record /"
                                + record.joined(separator: "/") + ", and the file is larger than a record can be",
                            hint: "Import the whole record at /\(record.joined(separator: "/")).")
                        throw error.remedied(.importWholeRecord(path: record))
                    }
                }
                let json = String(decoding: bytes, as: UTF8.self)
                let below = Array(options.at[record.count...])
                if options.mode == .replace, !options.allowsEmptying, try TreeValue.parse(json: json) == nil,
                    try exportedValue(at: options.at) != nil
                {
                    throw Self.emptyingRefused(at: options.at, everyValueRejected: false)
                }
                var recordOptions = options
                recordOptions.at = record
                recordOptions.mode = .replace
                recordOptions.allowsEmptying = true
                recordOptions.isDryRun = false  // the transaction around it rolls back
                let rewritten = try rewrittenRecord(record, changing: below, with: json, mode: options.mode)
                var report = try importTree(from: MemorySource(rewritten), options: recordOptions, onReject: onReject)
                report.isDryRun = options.isDryRun
                report.mode = options.mode
                return report
            }
        }
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

    /// Gathers planner statistics on every table a whole-tree import filled, in its transaction: a store
    /// loaded by COPY has none until autovacuum comes by, and the first export and check after it would plan
    /// blind (a 1.1 GB store exported in 15.0 s before ANALYZE, 11.4 s after).
    private func analyzeTables(except done: Set<String> = [], onStep: (ImportStep) -> Void) throws {
        for table in Store.treeTables + Store.lookupTables where !done.contains(table) {
            onStep(.analyzing(tables: [table]))
            try connection.execute("ANALYZE \(identifier: table)")
        }
    }

    /// Gathers planner statistics on every table of a distributed store, after the import's commit, in one
    /// statement: Citus sends each table's ANALYZE to every shard, and one statement for all took 1.15 s where
    /// one per table took 2.08 s (20,000 users, two workers).
    private func analyzeDistributedTables(onStep: (ImportStep) -> Void) throws {
        let tables = Store.treeTables + Store.lookupTables
        onStep(.analyzing(tables: tables))
        try connection.execute("ANALYZE \(Query.identifiers(tables))")
    }

    /// Keeps what the store derives from /posts and /chats in step with what the import did to them: stores the
    /// likes it staged, then for posts and chat copies whose root it wrote (`written`) settles the lookup, and for
    /// posts the likes, of the keys whose holders changed (`changedKeys`: below one user, the keys held before,
    /// in `before`, or now but not both; all of them when it wrote the root). A whole-tree import held nothing
    /// before: the lookups are filled whole (but `filledLookups`, which the parallel import's sessions filled),
    /// and staging gave each like its owners. `isDistributed`: whether the store is distributed, when known.
    private func settleDerivedRows(
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
