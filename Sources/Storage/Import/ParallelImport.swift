import FirebaseTree
import Foundation
internal import PostgresClient

/// The top-level nodes of one file, shared out among the sessions of a parallel import as they reach them. Every
/// session reads the whole file: it imports the nodes it claims and skips the others' without reading their
/// tokens. A node goes to the first session that reaches it, or, when its key came before (a repeated key, whose
/// last occurrence wins), to the session that has the earlier one, which replaces it as a single session would.
final class NodeShares: @unchecked Sendable {
    private let lock = NSLock()
    /// Each node's session, in file order.
    private var owners: [Int] = []
    private var keys: [String] = []
    /// The failures that end the import, each with its node and whether its session was importing it.
    private var failures: [(error: any Error, node: Int, isOwned: Bool)] = []
    /// Rows each session mapped so far.
    private var rows: [Int]

    /// Shares for `sessions` sessions.
    init(sessions: Int) {
        rows = Array(repeating: 0, count: sessions)
    }

    /// Whether `session` imports the `index`th top-level node, whose key is `key`; sessions ask in file order.
    func claim(_ index: Int, key: String, by session: Int) -> Bool {
        lock.withLock {
            if index < owners.count { return owners[index] == session }
            let earlier = keys.lastIndex { FirebaseKey.same($0, key) }
            owners.append(earlier.map { owners[$0] } ?? session)
            keys.append(key)
            return owners[index] == session
        }
    }

    /// The keys of the top-level nodes met so far, in file order.
    var keysInOrder: [String] { lock.withLock { keys } }

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

    /// Records that `session` has mapped `count` rows; returns the rows of all sessions together.
    func add(rows count: Int, of session: Int) -> Int {
        lock.withLock {
            rows[session] = count
            return rows.reduce(0, +)
        }
    }
}

/// One of a parallel import's other sessions. It reads the whole file and imports the nodes it claims into twins
/// of its own (in `schema`), builds their indexes and statistics, then waits: the import's session tells it to
/// commit (every session loaded its nodes; the import takes the tables over) or to roll back.
final class HelperImport: @unchecked Sendable {
    /// Its number among the import's sessions (the import's own is 0).
    let number: Int
    /// The schema of its twins.
    let schema: String
    private let loaded = DispatchSemaphore(value: 0)
    private let verdict = DispatchSemaphore(value: 0)
    private let ended = DispatchSemaphore(value: 0)
    private var commits = false
    /// Set before `loaded` is signalled.
    private var outcome: Result<Outcome, any Error> = .failure(CancellationError())
    /// Set before `ended` is signalled: whether it committed.
    private var endResult: Result<Void, any Error> = .success(())

    /// What a helper loaded.
    struct Outcome {
        /// The report of the nodes it imported.
        var report: ImportReport
        /// The tables it wrote rows to (`postLikes` meaning its staged likes).
        var tables: Set<TreeTable>
        /// Its index builds and ANALYZEs, timed as the import's steps after the reading are.
        var finishing: [ImportReport.Finishing]
        /// The tables it gathered statistics on.
        var analyzed: Set<String>
    }

    /// Starts session `number` of `shares` on a thread of its own, its schema named with the import's `token`.
    init(
        number: Int, token: String, opening open: @escaping @Sendable () throws -> StoreConnection,
        source makeSource: @escaping @Sendable () throws -> any ByteSource, options: ImportOptions, shares: NodeShares,
        onRows: (@Sendable (Int) -> Void)?, isCancelled: @escaping @Sendable () -> Bool,
        onReject: @escaping @Sendable (ImportReject) throws -> Void
    ) {
        self.number = number
        schema = SideTables.helperSchemaPrefix + token + "_" + String(number)
        Thread { [self] in
            run(
                opening: open, source: makeSource, options: options, shares: shares, onRows: onRows,
                isCancelled: isCancelled, onReject: onReject)
        }.start()
    }

    /// Waits until it has loaded its nodes, or failed.
    func waitUntilLoaded() -> Result<Outcome, any Error> {
        loaded.wait()
        loaded.signal()
        return outcome
    }

    /// Tells it to commit or roll back, and waits until it has; throws what failed its commit.
    func end(committing: Bool) throws {
        commits = committing
        verdict.signal()
        ended.wait()
        try endResult.get()
    }

    private func run(
        opening open: () throws -> StoreConnection, source makeSource: () throws -> any ByteSource,
        options: ImportOptions, shares: NodeShares, onRows: ((Int) -> Void)?, isCancelled: @escaping () -> Bool,
        onReject: @escaping (ImportReject) throws -> Void
    ) {
        var connection: StoreConnection?
        do {
            let opened = try open()
            connection = opened
            try opened.execute("BEGIN")
            outcome = .success(
                try load(
                    on: opened, source: try makeSource(), options: options, shares: shares, onRows: onRows,
                    isCancelled: isCancelled, onReject: onReject))
        } catch {
            outcome = .failure(error)
        }
        loaded.signal()
        verdict.wait()
        do {
            if case .success = outcome, commits, let connection {
                try connection.execute("COMMIT")
            } else {
                _ = try? connection?.execute("ROLLBACK")
            }
        } catch {
            endResult = .failure(error)
        }
        ended.signal()
    }

    private func load(
        on connection: StoreConnection, source: any ByteSource, options: ImportOptions, shares: NodeShares,
        onRows: ((Int) -> Void)?, isCancelled: @escaping () -> Bool, onReject: @escaping (ImportReject) throws -> Void
    ) throws -> Outcome {
        try connection.execute(
            """
            SELECT set_config('lock_timeout', '0', true),
                set_config('application_name', \(StoreConnection.importApplicationName), true)
            """)
        let side = try SideTables.plan(on: connection, schema: schema).get()
        let deferredIndexes = try side.create(keepsIndexes: options.keepsIndexes)
        let treeRows = TreeRows(connection: connection)
        let copies = DerivedCopies(connection: connection)
        let loader = TableLoader(
            connection: connection, usesFreeze: true,
            destinations: [
                .postLikes: .init(
                    table: DerivedCopies.stagedLikesTable, create: { try copies.stageLikes(isTemporary: false) })
            ])
        let importer = TreeImporter(
            source: source, loader: loader, options: options,
            onFinding: { finding in
                try loader.flush()
                try deferredIndexes.build(onStep: { _ in })
                var deleted = try treeRows.deleteRows(under: finding.path)
                if loader.redirected.contains(.postLikes) {
                    deleted[.postLikes, default: 0] += try copies.deleteStagedLikes(under: finding.path)
                }
                return deleted
            },
            onReject: onReject)
        importer.shares = (shares, number)
        let number = number
        loader.onRows = { rows in
            let total = shares.add(rows: rows, of: number)
            onRows?(total)
        }
        loader.isCancelled = { [unowned importer] in isCancelled() || shares.stops(at: importer.node.index) }
        do {
            try StorageError.converting { try importer.run() }
            try loader.flush()
        } catch {
            loader.abort()
            if !shares.stops(at: importer.node.index) {
                let described =
                    (error as? StorageError)?.adding(
                        context: "import rolled back after reading \(importer.bytesRead) bytes") ?? error
                shares.fail(described, at: importer.node.index, isOwned: importer.node.isOwned)
            }
            throw error
        }
        let tables = Set(TreeTable.allCases.filter { loader.counts[$0.rawValue].rows > 0 })
        let filled = Set(tables.subtracting([.postLikes]).map(\.name))
        let finishing = FinishingClock()
        try deferredIndexes.build(of: filled, onStep: finishing.begin)
        for table in filled.sorted() {
            finishing.begin(.analyzing(table: table))
            try connection.execute("ANALYZE \(identifier: table)")
        }
        finishing.end()
        return Outcome(report: importer.report, tables: tables, finishing: finishing.steps, analyzed: filled)
    }
}

/// A parallel import's loading sessions, as the import's own session sees them: each reads the whole file and
/// loads the nodes it claims; the import's session then takes their tables over.
struct HelperSessions {
    /// The sessions, numbered from 1.
    let helpers: [HelperImport]
    /// The nodes they share.
    let shares: NodeShares

    /// Starts `count` sessions beside the import's: the first reads `first` (the caller's source, whose progress
    /// it reports through `onRows`, with every session's rows), the others what `reopening` opens.
    init(
        count: Int, opening open: @escaping @Sendable () throws -> StoreConnection, first: any ByteSource,
        reopening: @escaping @Sendable () throws -> any ByteSource, options: ImportOptions,
        onRows: @escaping (Int) -> Void, isCancelled: @escaping @Sendable () -> Bool,
        onReject: @escaping (ImportReject) throws -> Void
    ) {
        let shares = NodeShares(sessions: count + 1)
        self.shares = shares
        // The caller's source and handlers go to one thread at a time: the first session's, and rejects one by one.
        nonisolated(unsafe) let first = first
        nonisolated(unsafe) let onRows = onRows
        nonisolated(unsafe) let handler = onReject
        let rejects = NSLock()
        let serialized: @Sendable (ImportReject) throws -> Void = { reject in
            try rejects.withLock { try handler(reject) }
        }
        // Names no earlier import used, so that a leftover this import drops (uncommitted) is never in the way.
        let token = String(UInt32.random(in: 0...UInt32.max), radix: 16)
        let readingFirst: @Sendable () throws -> any ByteSource = { first }
        let reportingRows: @Sendable (Int) -> Void = { onRows($0) }
        helpers = (1...count).map { number in
            HelperImport(
                number: number, token: token, opening: open, source: number == 1 ? readingFirst : reopening,
                options: options,
                shares: shares, onRows: number == 1 ? reportingRows : nil, isCancelled: isCancelled,
                onReject: serialized)
        }
    }

    /// Waits until every session has loaded its nodes, then has them commit; their reports, with the tables each
    /// wrote. Throws the failure a single session would have met first, having had every session roll back.
    func finishLoading() throws -> [HelperImport.Outcome] {
        let outcomes = helpers.map { $0.waitUntilLoaded() }
        if let failure = shares.firstFailure ?? outcomes.lazy.compactMap(\.failure).first {
            for helper in helpers { try? helper.end(committing: false) }
            throw failure
        }
        for helper in helpers { try helper.end(committing: true) }
        return outcomes.compactMap { try? $0.get() }
    }

    /// Takes the sessions' tables over into `side`, the import's twins: a table one session wrote becomes the
    /// twin; rows another session wrote into it too (unmapped values, under nodes of several sessions) are added.
    /// Returns the tables taken over (`indexed`: their indexes are built; `analyzed`: their statistics gathered,
    /// unless rows were added after) and whether any session staged likes. The sessions' schemas are dropped.
    func takeOver(_ outcomes: [HelperImport.Outcome], into side: SideTables, on connection: StoreConnection) throws
        -> (indexed: Set<String>, analyzed: Set<String>, stagedLikes: Bool)
    {
        var adopted: Set<String> = []
        var merged: Set<String> = []
        for (helper, outcome) in zip(helpers, outcomes) {
            for table in TreeTable.allCases where outcome.tables.contains(table) {
                // A session's likes are staged, to be given their posts' owners here.
                let name = table == .postLikes ? DerivedCopies.stagedLikesTable : table.name
                if adopted.contains(name) {
                    try side.merge(name, from: helper.schema)
                    merged.insert(name)
                } else if table == .postLikes {
                    try connection.execute(
                        "ALTER TABLE \(identifier: helper.schema).\(identifier: name) SET SCHEMA \(identifier: side.schemaName)"
                    )
                    adopted.insert(name)
                } else {
                    try side.adopt(name, from: helper.schema)
                    adopted.insert(name)
                }
            }
            try SideTables.dropHelper(helper.schema, on: connection)
        }
        let stagedLikes = adopted.remove(DerivedCopies.stagedLikesTable) != nil
        return (adopted, adopted.subtracting(merged), stagedLikes)
    }

    /// Drops the sessions' schemas (after a failure of the import, on a connection outside its transaction).
    func dropSchemas(on connection: StoreConnection) {
        for helper in helpers { _ = try? SideTables.dropHelper(helper.schema, on: connection) }
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
    /// import's own session analyzed.
    mutating func addFinishing(of outcomes: [HelperImport.Outcome], analyzedHere: Set<String>) {
        var analyzed = analyzedHere
        for outcome in outcomes {
            analyzed.formUnion(outcome.analyzed)
            for step in outcome.finishing {
                if let index = finishing.firstIndex(where: { $0.target == step.target }) {
                    finishing[index].count += step.count
                    finishing[index].seconds += step.seconds
                } else {
                    let switchIndex = finishing.firstIndex { $0.target == Finishing.switch } ?? finishing.endIndex
                    finishing.insert(step, at: switchIndex)
                }
            }
        }
        if let index = finishing.firstIndex(where: { $0.target == Finishing.statistics }) {
            finishing[index].count = analyzed.count
        }
    }

    /// The reports of a parallel import's sessions as one: lines and node totals added up by node and table,
    /// nodes in the order of their first key in the file (`keys`), each node's lines in its session's order.
    static func combining(_ reports: [ImportReport], keys: [String]) -> ImportReport {
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
        for (index, key) in keys.enumerated() where order[TreeImporter.reportedNode(key)] == nil {
            order[TreeImporter.reportedNode(key)] = index
        }
        merged.nodes.sort { (order[$0.name] ?? Int.max) < (order[$1.name] ?? Int.max) }
        merged.lines = merged.nodes.flatMap { node in merged.lines.filter { $0.node == node.name } }
        return merged
    }
}
