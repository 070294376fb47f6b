import FirebaseTree
import Foundation
internal import PostgresClient

/// The top-level nodes of one file, shared out among the sessions of a parallel import as they reach them. Every
/// session reads the whole file: it imports the nodes it claims and skips the others' without reading their
/// tokens. A node goes to the first session that reaches it, or, when its key came before (a repeated key, whose
/// last occurrence wins), to the session that has the earlier one, which replaces it as a single session would.
/// /posts and /postLikes go to one session, which then gives each like its post's owners itself.
///
/// Past `reachedLimit` nodes (no real export has that many at its top level, but a file may), a node's session is
/// told by its key alone, so that what the shares keep, and the time each claim takes, do not grow with the file.
final class NodeShares: @unchecked Sendable {
    private let lock = NSLock()
    /// The session of each of the first `reachedLimit` nodes, in file order, and of their keys.
    private var owners: [Int] = []
    private var ownersByKey: [TreeKey: Int] = [:]
    /// The nodes the import's report names (`TreeImporter.reportedNode`), in the order the file first has them.
    private var reported: [String] = []
    private let sessions: Int
    /// The failures that end the import, each with its node and whether its session was importing it.
    private var failures: [(error: any Error, node: Int, isOwned: Bool)] = []
    /// Rows each session mapped so far.
    private var rows: [Int]
    /// How far in the file each session still loading has read (`Int.max` once it has loaded its nodes).
    private var positions: [Int]

    /// Nodes shared out as sessions reach them; the rest go by their keys.
    static let reachedLimit = 4096

    /// Keys whose nodes one session loads together: the likes need their posts' owners.
    private static let partners: [String: String] = {
        let posts = TreeTable.posts.rootKey ?? "posts", likes = TreeTable.postLikes.rootKey ?? "postLikes"
        return [posts: likes, likes: posts]
    }()

    /// Shares for `sessions` sessions: the import's own (0, which loads nothing) and the loading ones.
    init(sessions: Int) {
        self.sessions = sessions
        rows = Array(repeating: 0, count: sessions)
        positions = Array(repeating: 0, count: sessions)
    }

    /// Whether `session` imports the `index`th top-level node, whose key is `key`; sessions ask in file order.
    func claim(_ index: Int, key: String, by session: Int) -> Bool {
        lock.withLock {
            if index < owners.count { return owners[index] == session }
            let partner = Self.partners[key]
            let earlier = ownersByKey[TreeKey(key)] ?? partner.flatMap { ownersByKey[TreeKey($0)] }
            let node = TreeImporter.reportedNode(key)
            if !reported.contains(node) { reported.append(node) }
            guard index < Self.reachedLimit else {
                // Every session reached the first nodes before this one, so `ownersByKey` no longer changes: each
                // session that asks gets the same answer, and a repeated key the same session.
                var hasher = Hasher()
                hasher.combine(TreeKey(partner.map { min($0, key) } ?? key))
                return (earlier ?? 1 + Int(UInt(bitPattern: hasher.finalize()) % UInt(sessions - 1))) == session
            }
            let owner = earlier ?? session
            owners.append(owner)
            ownersByKey[TreeKey(key)] = owner
            return owner == session
        }
    }

    /// The nodes the report names, in the order the file first has them (so far).
    var reportedNodesInOrder: [String] { lock.withLock { reported } }

    /// Records a failure of a session at node `node`; sessions reading later nodes then stop.
    func fail(_ error: any Error, at node: Int, isOwned: Bool) {
        lock.withLock { failures.append((error, node, isOwned)) }
    }

    /// Whether a session reading node `node` is to stop: an earlier node failed, so the import fails there.
    func stops(at node: Int) -> Bool {
        lock.withLock { failures.contains { $0.node < node } }
    }

    /// The failure a single session would have met first: at the earliest node, from the session importing it.
    var firstFailure: (any Error)? {
        lock.withLock { failures.min { ($0.node, $0.isOwned ? 0 : 1) < ($1.node, $1.isOwned ? 0 : 1) }?.error }
    }

    /// Records that `session` has mapped `count` rows and read the file up to byte `position`.
    func report(rows count: Int, position: Int, of session: Int) {
        lock.withLock {
            rows[session] = count
            positions[session] = max(positions[session], position)
        }
    }

    /// How far the import has got: every byte before `bytes` was loaded or skipped by every session, and the
    /// sessions mapped `rows` rows together.
    var progress: (bytes: Int, rows: Int) {
        lock.withLock { (positions.dropFirst().min() ?? 0, rows.reduce(0, +)) }
    }
}

/// One of a parallel import's loading sessions. It reads the whole file and imports the nodes it claims into
/// twins of its own (in `schema`) and commits them, then builds indexes and gathers statistics, of its tables or
/// of other sessions', from the import's `FinishingWork`. The import's own session then takes the tables over,
/// or, after a failure anywhere, drops every session's schema (a crash leaves it to the next import, which knows
/// it by its comment; nothing reads it meanwhile).
///
/// The session that claims /posts and /postLikes reads the likes last: in an export they come before the posts,
/// and once the posts are loaded it knows each like's owners (`PostOwners`) and sends the likes with them.
final class HelperImport: @unchecked Sendable {
    /// Its number among the import's sessions (the import's own is 0).
    let number: Int
    /// The schema of its twins.
    let schema: String
    private let open: @Sendable () throws -> StoreConnection
    /// Opens the file, from its start.
    private let makeSource: @Sendable () throws -> any ByteSource
    private let options: ImportOptions
    private let shares: NodeShares
    private let isCancelled: @Sendable () -> Bool
    private let onReject: @Sendable (ImportReject) throws -> Void
    /// The index builds and ANALYZEs of every session.
    private let work: FinishingWork
    private let loaded = DispatchSemaphore(value: 0)
    /// Whether its failure, if it fails, is known to `shares` (or was caused by another's).
    private var isFailureShared = false
    /// Set before `loaded` is signalled.
    private var outcome: Result<Outcome, any Error> = .failure(CancellationError())

    /// Reads the likes after the posts.
    private let likes: LikesAfterPosts

    /// What a helper loaded.
    struct Outcome {
        /// The report of the nodes it imported.
        var report: ImportReport
        /// The tables it wrote rows to.
        var tables: Set<TreeTable>
        /// The lookups it filled from its records (`post_keys` when it loaded /posts, `chat_holders` for /chats).
        var lookups: Set<String>
        /// Its steps after the reading (the likes it stored, the lookups it filled, the index builds and
        /// ANALYZEs it ran, whichever session's tables), timed as the import's own are.
        var finishing: [ImportReport.Finishing]
        /// The tables it gathered statistics on, whichever session loaded them.
        var analyzed: Set<String>
        /// The indexes it built, each as `table/name` (as `DeferredIndexes.built`), whichever session loaded them.
        var indexed: Set<String>
    }

    /// Starts session `number` of `shares` on a thread of its own, its schema named with the import's `token`,
    /// sharing `work` with the others.
    init(
        number: Int, token: String, opening open: @escaping @Sendable () throws -> StoreConnection,
        source makeSource: @escaping @Sendable () throws -> any ByteSource, options: ImportOptions, shares: NodeShares,
        work: FinishingWork, isCancelled: @escaping @Sendable () -> Bool,
        onReject: @escaping @Sendable (ImportReject) throws -> Void
    ) {
        self.number = number
        schema = SideTables.helperSchemaPrefix + token + "_" + String(number)
        self.open = open
        self.makeSource = makeSource
        self.options = options
        self.shares = shares
        self.work = work
        self.isCancelled = isCancelled
        self.onReject = onReject
        likes = LikesAfterPosts(reopening: makeSource, options: options, onReject: onReject)
        Thread { [self] in run() }.start()
    }

    /// Waits until it has loaded its nodes and run its share of the work after, or failed; nil when `timeout`
    /// passed first.
    func waitUntilLoaded(timeout: DispatchTime = .distantFuture) -> Result<Outcome, any Error>? {
        guard loaded.wait(timeout: timeout) == .success else { return nil }
        loaded.signal()
        return outcome
    }

    private func run() {
        var connection: StoreConnection?
        var hasGiven = false
        do {
            let opened = try open()
            connection = opened
            // For the session, not a transaction: its builds run after its commit. A build whose console is gone
            // (kill -9) stops within a second rather than run on and hold its table, which the next import drops.
            try opened.execute(
                """
                SELECT set_config('lock_timeout', '0', false),
                    set_config('application_name', \(StoreConnection.importApplicationName), false),
                    set_config('client_connection_check_interval', '1000', false)
                """)
            try opened.execute("BEGIN")
            let (loaded, finishing) = try load(on: opened)
            try opened.execute("COMMIT")
            work.give(try jobs(for: loaded, on: opened))
            hasGiven = true
            outcome = .success(try runJobs(after: loaded, finishing: finishing, on: opened))
        } catch {
            outcome = .failure(error)
            if !hasGiven { work.giveNone() }
            work.stop()
            // A failure outside the file's nodes (its session, its tables, a build) ends every session's reading.
            if !isFailureShared { shares.fail(error, at: -1, isOwned: true) }
            if connection?.isInTransaction == true { _ = try? connection?.execute("ROLLBACK") }
        }
        loaded.signal()
    }

    /// What `load` leaves for its session's jobs: the report, the tables written, the lookups filled and the
    /// indexes left to build.
    private struct Loaded {
        var report: ImportReport
        var tables: Set<TreeTable>
        var lookups: Set<String>
        var indexes: DeferredIndexes
    }

    private func load(on connection: StoreConnection) throws -> (Loaded, FinishingClock) {
        let side = try SideTables.plan(on: connection, schema: schema).get()
        let deferredIndexes = try side.create(keepsIndexes: options.keepsIndexes)
        try side.redirectWrites()
        let treeRows = TreeRows(connection: connection)
        let copies = DerivedCopies(connection: connection)
        let target = TreeLoad.Target(
            connection: connection, treeRows: treeRows, copies: copies,
            export: TreeExport(
                connection: connection,
                reads: Reads(connection: connection, lock: MaintenanceLock(connection: connection), onReadWait: nil),
                treeRows: treeRows))
        // The likes are read after the posts (`LikesAfterPosts`): this load meets none.
        let load = TreeLoad(
            try makeSource(), options: options, on: target, freezing: true, likes: .direct,
            findings: .deleteRows(indexes: deferredIndexes), onReject: onReject)
        load.importer.topLevel.shares = (shares, number)
        load.importer.topLevel.deferredKey = LikesAfterPosts.key
        try read(load, rowsBefore: 0, position: { [unowned load] in load.importer.loadedThrough })
        // Before the likes, whose owners are the posts' as they are stored.
        try load.storeReshaped()
        var report = load.importer.report
        var loads = [load]
        if let nodes = load.importer.topLevel.deferred {
            let likesLoad = try likes.loading(
                nodes, posts: load.loader.counts[TreeTable.posts.rawValue].rows, on: target, indexes: deferredIndexes,
                onStep: { _ in })
            try read(
                likesLoad, rowsBefore: load.loader.totalRows,
                position: { [unowned likesLoad] in
                    likesLoad.importer.bytesRead
                })
            report = .combining([report, likesLoad.importer.report], nodes: load.importer.topLevel.reportedNodes)
            loads.append(likesLoad)
        }
        shares.report(rows: loads.reduce(0) { $0 + $1.loader.totalRows }, position: .max, of: number)
        let finishing = FinishingClock()
        let tables = Set(
            TreeTable.allCases.filter { table in loads.contains { $0.loader.counts[table.rawValue].rows > 0 } })
        // It holds every post of the file (see `NodeShares`): likes it staged get their owners here. Its posts and
        // chats are all the file has (each root goes to one session): their lookups are filled here, beside the
        // other sessions' work, rather than by the import's session once every session is done.
        let lookups = Set(
            HeldRecords.all.filter { records in tables.contains { $0.name == records.table } }.map(\.lookup))
        try KeptCopies.emptyTables(copies: copies).settle(
            stagedLikes: loads.contains(where: \.stagedLikes),
            skipping: Set(HeldRecords.all.map(\.lookup)).subtracting(lookups), isDistributed: false,
            onStep: finishing.begin)
        finishing.end()
        return (Loaded(report: report, tables: tables, lookups: lookups, indexes: deferredIndexes), finishing)
    }

    /// The index builds and ANALYZEs of the tables `loaded` filled, committed: each table's unbuilt indexes, then
    /// its statistics, with its size.
    private func jobs(for loaded: Loaded, on connection: StoreConnection) throws -> [FinishingWork.Job] {
        let filled = Set(loaded.tables.map(\.name)).union(loaded.lookups)
        var sizes: [String: Int] = [:]
        for row in try connection.query(
            """
            SELECT relname::text, pg_table_size(oid) FROM pg_class
            WHERE relnamespace = \(schema)::regnamespace AND relkind = 'r' AND relname = ANY (\(filled.sorted()))
            """)
        {
            sizes[try row.decode(String.self, at: 0)] = try row.decode(Int.self, at: 1)
        }
        let job = { (table: String, kind: FinishingWork.Job.Kind) in
            FinishingWork.Job(schema: self.schema, table: table, kind: kind, size: sizes[table] ?? 0)
        }
        return loaded.indexes.unbuilt(of: filled).map { job($0.table, .index(name: $0.name, statement: $0.definition)) }
            + filled.sorted().map { job($0, .analyze) }
    }

    /// Runs jobs of every session's from `work` until none is left, on `connection` (out of any transaction),
    /// timed on `finishing`; returns what this session loaded and did.
    private func runJobs(after loaded: Loaded, finishing: FinishingClock, on connection: StoreConnection) throws
        -> Outcome
    {
        var indexed = loaded.indexes.built
        var analyzed: Set<String> = []
        while let job = work.next() {
            defer { work.finish(job) }
            // Ctrl-C cancels the running statement; between two, only this asks.
            if isCancelled() { throw StorageError.cancelledByUser }
            switch job.kind {
            case .index(let name, let statement):
                // Timed, never shown: a session beside the import's has no progress display of its own.
                finishing.begin(.buildingIndex(name: name, number: 1, count: 1))
                // The text comes from the catalog (see `SideTables.statementsQuery`), which quotes every name.
                try connection.execute(script: statement)
                indexed.insert(job.table + "/" + name)
            case .analyze:
                finishing.begin(.analyzing(tables: [job.table]))
                try connection.execute("ANALYZE \(identifier: job.schema).\(identifier: job.table)")
                analyzed.insert(job.table)
            }
        }
        finishing.end()
        return Outcome(
            report: loaded.report, tables: loaded.tables, lookups: loaded.lookups, finishing: finishing.steps,
            analyzed: analyzed, indexed: indexed)
    }

    /// Runs `load`'s walk and sends the rows it left buffered; tells `shares` how far it got (`position`, and its
    /// rows after the session's `rowsBefore`) as it reads, and of its failure, which it throws.
    private func read(_ load: TreeLoad, rowsBefore: Int, position: @escaping () -> Int) throws {
        let (shares, number, isCancelled) = (shares, number, isCancelled)
        let importer = load.importer
        load.loader.onRows = { rows in shares.report(rows: rowsBefore + rows, position: position(), of: number) }
        load.loader.isCancelled = { [unowned importer] in
            isCancelled() || shares.stops(at: importer.topLevel.current.index)
        }
        do {
            try load.walk()
        } catch {
            isFailureShared = true
            if !shares.stops(at: importer.topLevel.current.index) {
                let described =
                    (error as? StorageError)?.adding(
                        context: "import rolled back after reading \(importer.bytesRead) bytes") ?? error
                shares.fail(described, at: importer.topLevel.current.index, isOwned: importer.topLevel.current.isOwned)
            }
            // The likes it skipped come before where it failed: a failure of theirs is the import's.
            if let nodes = importer.topLevel.deferred, !shares.stops(at: nodes.first) {
                checkLikes(nodes, rowsBefore: load.loader.totalRows)
            }
            throw error
        }
    }

    /// Reads the likes the session skipped without loading them, after it failed further on: a failure of
    /// theirs, earlier in the file, goes to `shares`.
    private func checkLikes(_ nodes: DeferredNodes, rowsBefore: Int) {
        guard let checking = try? likes.checking(nodes) else { return }
        _ = try? read(checking, rowsBefore: rowsBefore, position: { nodes.start.offset })
    }
}

/// A parallel import's loading sessions, as the import's own session sees them: each reads the whole file and
/// loads the nodes it claims; the import's session then takes their tables over.
struct HelperSessions {
    /// The sessions, numbered from 1.
    let helpers: [HelperImport]
    /// The nodes they share.
    let shares: NodeShares
    /// The index builds and ANALYZEs they share.
    let work: FinishingWork

    /// Starts `count` sessions beside the import's, each reading what `reopening` opens, of an import that
    /// builds `indexCount` indexes in all.
    init(
        count: Int, indexCount: Int, opening open: @escaping @Sendable () throws -> StoreConnection,
        reopening: @escaping @Sendable () throws -> any ByteSource, options: ImportOptions,
        isCancelled: @escaping @Sendable () -> Bool, onReject: @escaping (ImportReject) throws -> Void
    ) {
        let shares = NodeShares(sessions: count + 1)
        self.shares = shares
        let work = FinishingWork(sessions: count, indexCount: indexCount)
        self.work = work
        // Names no earlier import used, so that a leftover of a crashed one is never in the way.
        let token = String(UInt32.random(in: 0...UInt32.max), radix: 16)
        // Rejects go to the caller's handler one at a time, whichever session met them.
        nonisolated(unsafe) let handler = onReject
        let rejects = NSLock()
        let serialized: @Sendable (ImportReject) throws -> Void = { reject in
            try rejects.withLock { try handler(reject) }
        }
        helpers = (1...count).map { number in
            HelperImport(
                number: number, token: token, opening: open, source: reopening, options: options, shares: shares,
                work: work, isCancelled: isCancelled, onReject: serialized)
        }
    }

    /// Waits until every session has loaded and committed its nodes and the sessions have built their tables'
    /// indexes and statistics; their reports, with the tables each wrote. Throws the failure a single session
    /// would have met first (the sessions' schemas are then for `abandon` to drop). Meanwhile, on this thread,
    /// `source` (the caller's, whose reads a progress display counts) is skipped as far as every session has got,
    /// `onRows` hears the rows of all sessions, and `onStep` the sessions' build or ANALYZE that has run longest,
    /// as often as it looks (ten times a second).
    func finishLoading(
        pacing source: inout some ByteSource, onRows: (Int) -> Void, onStep: (ImportStep) -> Void
    ) throws -> [HelperImport.Outcome] {
        var paced = 0
        // Once the source is at its end, asking again would only tell a progress display of no bytes, every tenth
        // of a second, and have it redraw its bar over the step shown. A source that skips only by reading (a
        // decompressed file) is not paced at all: that would read the file once more than the sessions do, and
        // what counts its bytes counts those of the sessions' own sources instead.
        var isPacedToEnd = !source.skipsWithoutReading
        var movedTo = 0
        var shown: ImportStep?
        var outcomes: [Result<HelperImport.Outcome, any Error>] = []
        for helper in helpers {
            while true {
                if let outcome = helper.waitUntilLoaded(timeout: .now() + 0.1) {
                    outcomes.append(outcome)
                    break
                }
                let (bytes, rows) = shares.progress
                // Skipped, not read: a file seeks, and only what counts the bytes (a progress display) hears them.
                while !isPacedToEnd, paced < bytes {
                    let count = try source.skip(bytes - paced)
                    paced += count
                    isPacedToEnd = count == 0
                }
                onRows(rows)
                // A session that read on after the builds began moves the bytes on, and a progress display then
                // redraws its bar over the step it showed: shown again.
                if let step = work.currentStep, step != shown || bytes != movedTo {
                    onStep(step)
                    shown = step
                }
                movedTo = bytes
            }
        }
        if let failure = shares.firstFailure ?? outcomes.lazy.compactMap(\.failure).first { throw failure }
        return outcomes.compactMap { try? $0.get() }
    }

    /// Takes the sessions' tables over into `side`, the import's twins: a table one session wrote becomes the
    /// twin; rows another session wrote into it too (unmapped values, under nodes of several sessions) are added;
    /// a lookup a session filled becomes the twin. Returns the tables taken over (`indexed`: their indexes are
    /// built; `analyzed`: their statistics gathered, unless rows were added after). The sessions' schemas are
    /// dropped.
    func takeOver(_ outcomes: [HelperImport.Outcome], into side: SideTables, on connection: StoreConnection) throws
        -> (indexed: Set<String>, analyzed: Set<String>)
    {
        var adopted: Set<String> = []
        var merged: Set<String> = []
        for (helper, outcome) in zip(helpers, outcomes) {
            for table in TreeTable.allCases where outcome.tables.contains(table) {
                if adopted.contains(table.name) {
                    try side.merge(table.name, from: helper.schema)
                    merged.insert(table.name)
                } else {
                    try side.adopt(table.name, from: helper.schema)
                    adopted.insert(table.name)
                }
            }
            for lookup in outcome.lookups.sorted() {
                try side.adopt(lookup, from: helper.schema)
                adopted.insert(lookup)
            }
            try SideTables.dropHelper(helper.schema, on: connection)
        }
        return (adopted, adopted.subtracting(merged))
    }

    /// After a failure of the import: has every session stop (those still loading roll back), then drops the
    /// schemas of those that had committed (on a connection outside the import's transaction).
    func abandon(on connection: StoreConnection) {
        // Sessions still reading stop at their next few thousand rows, those building after their statement.
        shares.fail(CancellationError(), at: -1, isOwned: false)
        work.stop()
        for helper in helpers { _ = helper.waitUntilLoaded() }
        connection.withoutCancels {
            for helper in helpers { _ = try? SideTables.dropHelper(helper.schema, on: connection) }
        }
    }
}

extension Result {
    /// The error, when this is a failure.
    fileprivate var failure: Failure? {
        if case .failure(let error) = self { error } else { nil }
    }
}

extension ImportReport {
    /// Adds the index builds and statistics of a parallel import's sessions to this report's steps after the
    /// reading (the import's own session's): each index counted once, each table's statistics once, the seconds
    /// added up (they ran beside each other, and beside the other sessions' loads). `analyzedHere`: the tables the
    /// import's own session analyzed; `indexedHere`: the indexes it built.
    mutating func addFinishing(
        of outcomes: [HelperImport.Outcome], analyzedHere: Set<String>, indexedHere: Set<String>
    ) {
        var analyzed = analyzedHere
        var indexed = indexedHere
        for outcome in outcomes {
            analyzed.formUnion(outcome.analyzed)
            indexed.formUnion(outcome.indexed)
            for step in outcome.finishing {
                if let index = finishing.firstIndex(where: { $0.target == step.target }) {
                    finishing[index].count += step.count
                    finishing[index].seconds += step.seconds
                } else {
                    // In the order one session takes the steps.
                    let order =
                        [TreeTable.postLikes.name] + TreeTable.lookupNames + [
                            Finishing.indexes, Finishing.statistics, Finishing.switch,
                        ]
                    let rank = { (target: String) in order.firstIndex(of: target) ?? order.count }
                    let index = finishing.firstIndex { rank($0.target) > rank(step.target) } ?? finishing.endIndex
                    finishing.insert(step, at: index)
                }
            }
        }
        // Counted once each, though two sessions that both wrote a table (unmapped values) both built its index:
        // the report says the same of every import of one file, however the sessions shared its nodes.
        if let index = finishing.firstIndex(where: { $0.target == Finishing.statistics }) {
            finishing[index].count = analyzed.count
        }
        if let index = finishing.firstIndex(where: { $0.target == Finishing.indexes }) {
            finishing[index].count = indexed.count
        }
    }

    /// The reports of a parallel import's sessions as one: lines and node totals added up by node and table,
    /// nodes in the order the file first has them (`nodes`), each node's lines in its session's order.
    static func combining(_ reports: [ImportReport], nodes: [String]) -> ImportReport {
        var merged = ImportReport()
        for other in reports {
            for line in other.lines {
                if let index = merged.lines.firstIndex(where: { $0.node == line.node && $0.table == line.table }) {
                    merged.lines[index].rowsRead += line.rowsRead
                    merged.lines[index].rowsImported += line.rowsImported
                    merged.lines[index].bytes += line.bytes
                } else {
                    merged.lines.append(line)
                }
            }
            for node in other.nodes {
                if let index = merged.nodes.firstIndex(where: { $0.name == node.name }) {
                    merged.nodes[index].inputBytes += node.inputBytes
                    merged.nodes[index].seconds += node.seconds
                    merged.nodes[index].rejected += node.rejected
                } else {
                    merged.nodes.append(node)
                }
            }
            merged.rejects += other.rejects
            merged.rejectCount += other.rejectCount
            merged.warnings += other.warnings
            merged.warningCount += other.warningCount
            merged.inputBytes = max(merged.inputBytes, other.inputBytes)
        }
        var order: [String: Int] = [:]
        for (index, node) in nodes.enumerated() where order[node] == nil { order[node] = index }
        merged.nodes.sort { (order[$0.name] ?? Int.max) < (order[$1.name] ?? Int.max) }
        merged.groupLinesByNode()
        return merged
    }
}
