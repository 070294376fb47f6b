import FirebaseTree
import Foundation
internal import PostgresClient

/// A replace of the whole store: twins filled beside the tables that readers go on reading (on several sessions
/// when the file can be read again), switched in at the end; or, where a switch cannot carry what the tables hold,
/// the tables emptied under a lock that keeps readers out.
extension TreeImport {
    /// A whole-tree replace: see `importTree`.
    func importWholeTree(
        from source: some ByteSource, options: ImportOptions, reopening: (@Sendable () throws -> any ByteSource)?,
        observer: ImportObserver
    ) throws -> ImportReport {
        let finishing = FinishingClock()
        let timedStep = finishing.timing(observer.onStep)
        // Inside a caller's transaction the import commits nothing: that transaction's commit is its caller's.
        let commits = !options.isDryRun && !connection.isInTransaction
        var helpers: HelperSessions?
        var analyzesAfterCommit = false
        var report: ImportReport
        do {
            report = try inImportTransaction(rollback: options.isDryRun) {
                let start = try beginWholeTree(options, reopening, observer.isCancelled, observer.onReject)
                helpers = start.helpers
                let loaded = try loadWholeTree(
                    source, start: start, options: options, reopening: reopening, observer: observer,
                    finishing: finishing, onStep: timedStep)
                analyzesAfterCommit = loaded.analyzesAfterCommit
                if !options.allowsEmptying, loaded.report.rowsImported == 0, start.heldSomething {
                    throw Self.emptyingRefused(at: [], everyValueRejected: loaded.report.rejectCount > 0)
                }
                // Releasing the files of what it replaced takes the commit seconds on a large store: shown and
                // timed, so that a progress display does not sit on the switch meanwhile.
                if commits { timedStep(.committing) }
                return loaded.report
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
        return report
    }

    /// Loads the file into what `start` prepared, on this session or the helpers', then settles the kept
    /// copies, builds the deferred indexes, gathers statistics (on Citus: after the commit, said in the result)
    /// and switches the twins in.
    private func loadWholeTree(
        _ source: some ByteSource, start: Start, options: ImportOptions,
        reopening: (@Sendable () throws -> any ByteSource)?, observer: ImportObserver, finishing: FinishingClock,
        onStep timedStep: @escaping (ImportStep) -> Void
    ) throws -> (report: ImportReport, analyzesAfterCommit: Bool) {
        let indexes = start.deferredIndexes
        var reading: TreeImporter?
        var read = WholeTreeRead()
        var cancelledSessions: [Int] = []
        var analyzesAfterCommit = false
        do {
            read = try readWholeTree(
                source, start: start, options: options, reopening: reopening, observer: observer,
                finishing: finishing, onStep: timedStep, reading: &reading)
            try KeptCopies.emptyTables(copies: copies).settle(
                stagedLikes: read.stagedLikes, skipping: Set(read.outcomes.flatMap(\.lookups)),
                isDistributed: start.isDistributed, onStep: timedStep)
            // Those of the tables the sessions built are marked built (`markBuilt` above).
            try indexes?.build(onStep: timedStep)
            if !options.isDryRun {
                // Citus cannot ANALYZE a table whose shards this transaction wrote: after the commit, there.
                if start.isDistributed == true {
                    analyzesAfterCommit = true
                } else {
                    try analyzeTables(except: read.analyzed, onStep: timedStep)
                }
                if let sideTables = start.sideTables {
                    timedStep(.switching)
                    cancelledSessions = try sideTables.switchIn(isCancelled: observer.isCancelled)
                }
            }
            finishing.end()
        } catch {
            throw Self.failed(error, reading: reading, options: options)
        }
        var report = read.report
        report.readersLockedOut = start.readersLockedOut
        report.sessions = start.helpers?.helpers.count ?? 1
        if let warning = start.fewerSessions { report.add(warning) }
        for pid in cancelledSessions { report.add(Self.cancelledSessionWarning(pid)) }
        report.finishing = finishing.steps
        report.addFinishing(
            of: read.outcomes, analyzedHere: Set(TreeTable.names + TreeTable.lookupNames).subtracting(read.analyzed),
            indexedHere: indexes?.built ?? [])
        return (report, analyzesAfterCommit)
    }

    /// What reading a whole-tree import's file gave: the report, whether likes were staged, and from the helpers'
    /// sessions the tables they analyzed and what each did.
    struct WholeTreeRead {
        var report = ImportReport()
        var stagedLikes = false
        var analyzed: Set<String> = []
        var outcomes: [HelperImport.Outcome] = []
    }

    /// Reads the file: the helpers' sessions finish loading it and their tables are taken over, or this session
    /// reads it (the likes last, with their owners, when it can read the file again; `reading` is the importer
    /// whose reading failed, when one did).
    private func readWholeTree(
        _ source: some ByteSource, start: Start, options: ImportOptions,
        reopening: (@Sendable () throws -> any ByteSource)?, observer: ImportObserver, finishing: FinishingClock,
        onStep timedStep: @escaping (ImportStep) -> Void, reading: inout TreeImporter?
    ) throws -> WholeTreeRead {
        var read = WholeTreeRead()
        if let helpers = start.helpers, let sideTables = start.sideTables {
            var pacing = source
            // Shown, not timed here: each session times its own steps.
            read.outcomes = try helpers.finishLoading(pacing: &pacing, onRows: observer.onRows, onStep: observer.onStep)
            let taken = try helpers.takeOver(read.outcomes, into: sideTables, on: connection)
            read.analyzed = taken.analyzed
            start.deferredIndexes?.markBuilt(tables: taken.indexed)
            read.report = .combining(read.outcomes.map(\.report), nodes: helpers.shares.reportedNodesInOrder)
            return read
        }
        let load = TreeLoad(
            source, options: options, on: target, freezing: true,
            findings: .deleteRows(indexes: start.deferredIndexes, clock: finishing, onStep: timedStep),
            onReject: observer.onReject
        ).observed(by: observer)
        // Rejects let through are counted in file order: the likes are read where they stand then.
        let likes =
            options.maximumRejects == 0
            ? reopening.map { LikesAfterPosts(reopening: $0, options: options, onReject: observer.onReject) } : nil
        if likes != nil { load.importer.topLevel.deferredKey = LikesAfterPosts.key }
        (read.report, read.stagedLikes) = try self.read(
            load, likes: likes, indexes: start.deferredIndexes, observer: observer, onStep: timedStep,
            reading: &reading)
        return read
    }

    /// How an import holds the store before it reads its file.
    struct Start {
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
            try connection.execute("LOCK TABLE \(TreeTable.lockList) IN EXCLUSIVE MODE")
            try maintenance.welcomeReaders()
            start.heldSomething = try !treeRows.isEmpty()
            if !distributed { try makeTwins() }
            try plan.redirectWrites()
            start.sideTables = plan
            let asked = options.jobs ?? Sessions.perCore
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
            try connection.execute("LOCK TABLE \(TreeTable.lockList) IN ACCESS EXCLUSIVE MODE")
            start.heldSomething = try !treeRows.isEmpty()
            try connection.execute("TRUNCATE \(TreeTable.lockList)")
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
    static func oneSessionWarning(asked: Int?, because reason: String) -> ImportWarning? {
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

    /// The warning for a session whose statement the switch cancelled.
    private static func cancelledSessionWarning(_ pid: Int) -> ImportWarning {
        ImportWarning(
            path: "/",
            message: "cancelled the statement of session \(pid): its transaction had read the tables before the "
                + "import and then waited to write them, which kept the import from switching")
    }

    /// Gathers planner statistics on every table a whole-tree import filled, in its transaction: a store
    /// loaded by COPY has none until autovacuum comes by, and the first export and check after it would plan
    /// blind (a 1.1 GB store exported in 15.0 s before ANALYZE, 11.4 s after).
    private func analyzeTables(except done: Set<String> = [], onStep: (ImportStep) -> Void) throws {
        for table in TreeTable.names + TreeTable.lookupNames where !done.contains(table) {
            onStep(.analyzing(tables: [table]))
            try connection.execute("ANALYZE \(identifier: table)")
        }
    }

    /// Gathers planner statistics on every table of a distributed store, after the import's commit, in one
    /// statement: Citus sends each table's ANALYZE to every shard, and one statement for all took 1.15 s where
    /// one per table took 2.08 s (20,000 users, two workers).
    private func analyzeDistributedTables(onStep: (ImportStep) -> Void) throws {
        let tables = TreeTable.names + TreeTable.lookupNames
        onStep(.analyzing(tables: tables))
        try connection.execute("ANALYZE \(Query.identifiers(tables))")
    }
}
