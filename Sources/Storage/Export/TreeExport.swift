import FirebaseTree
import Foundation
internal import PostgresClient

/// What an export wrote.
public struct ExportReport: Sendable {
    /// Rows read from the tables.
    public var rows = 0
    /// Rows the server sent (those read ahead included): what a query cost in rows.
    public var rowsFetched = 0
    /// The most bytes of row data one batch of a cursor held (rows with large values come without them).
    public var largestBatchBytes = 0
    /// JSON bytes written.
    public var bytes = 0
    /// Seconds from start to the last byte.
    public var seconds: Double = 0
    /// Tables read in `rtdb_key_order` (beside their primary key, or, read whole, sorted by it): they held keys
    /// that byte order puts elsewhere, or that need that order for a range.
    public var sortedTables: [String] = []
    /// Bytes held at most for objects that might have been arrays while they were written.
    public var peakHeldBytes = 0
    /// Bytes such objects moved to temporary files.
    public var spilledBytes = 0
    /// Sessions that read the tables: the export's own, and those that read tables ahead of it in its snapshot.
    public var sessions = 1
    /// JSON bytes those sessions rendered ahead (held in memory up to a budget per table, the rest in temporary
    /// files) and the export then copied in place.
    public var aheadBytes = 0
    /// On Citus, the nodes whose shards the export read on sessions of its own, in its snapshot, rather than
    /// through the coordinator (0: none, or one server).
    public var shardNodes = 0
    /// On Citus, why the shards were read through the coordinator instead (a node refused the console's
    /// connection); nil when they were not, or on one server.
    public var shardReadsUnavailable: String?
}

/// The report of an export in progress, shared by reference with the emitter's sink (which runs while the rows
/// are being read).
final class ExportTally {
    var report = ExportReport()

    /// Counts what a helper read for a block and copies its JSON into `emitter` as the root's child `key`.
    func add(_ rendered: BlockScheduler.Rendered, as key: String, into emitter: TreeEmitter) throws {
        report.rows += rendered.report.rows
        report.sortedTables += rendered.report.sortedTables
        report.rowsFetched += rendered.report.rowsFetched
        report.peakHeldBytes = max(report.peakHeldBytes, rendered.report.peakHeldBytes)
        report.spilledBytes += rendered.report.spilledBytes
        report.aheadBytes += rendered.json.count
        guard rendered.hasValue else { return }
        try emitter.addRendered(key) { append in try rendered.json.read(0..<rendered.json.count, append) }
    }

    /// Closes `merge` and adds what it fetched to the report.
    func close(_ merge: inout PartMerge) {
        merge.close()
        report.rowsFetched += merge.rowsFetched
        report.largestBatchBytes = max(report.largestBatchBytes, merge.largestBatchBytes)
    }
}

/// Export and `get`: the tree or a node of it as JSON, streamed from the tables in one snapshot.
struct TreeExport {
    /// The connection that reads.
    let connection: StoreConnection
    /// The snapshot every export reads in.
    let reads: Reads
    /// Where a stored record lies (`get` inside one reads it whole).
    let treeRows: TreeRows

    /// `Store.exportTree`: see there. In a transaction the export did not begin, helpers read only in `shared`,
    /// the caller's snapshot as `sharedSnapshot()` exported it before the transaction wrote anything.
    func exportTree(
        at path: [String] = [], options: JSONTextWriter.Options = .init(), shallow: Bool = false, jobs: Int = 1,
        sharing shared: Query? = nil, onProgress: (_ rows: Int) -> Void = { _ in },
        to write: (UnsafeBufferPointer<UInt8>) throws -> Void
    ) throws -> ExportReport {
        // Other sessions can share the snapshot of a transaction the export begins itself; one a write began
        // may hold what they would not see, unless its caller exported the snapshot before writing.
        let ownsTransaction = !connection.isInTransaction
        let snapshot: HelpersSnapshot? = ownsTransaction ? .exportedHere : shared.map { .shared($0) }
        return try exporting(options: options, to: write, afterEachChunk: onProgress) { emitter, tally in
            try exportRows(
                at: path, shallow: shallow, helpers: snapshot.map { ($0, jobs - 1) }, readsShards: ownsTransaction,
                into: emitter, tally: tally)
        }
    }

    /// The snapshot helpers read in: exported by the export's own transaction, or by its caller's.
    private enum HelpersSnapshot {
        case exportedHere
        case shared(Query)
    }

    /// `SET TRANSACTION SNAPSHOT` to the calling transaction's snapshot, for other sessions to read in; nil where
    /// none can: a standby (which exports no snapshot) or Citus (the coordinator's sessions would not share the
    /// workers' snapshots). The transaction must not be inside a savepoint, and what it writes after is not seen.
    func sharedSnapshot() throws -> Query? {
        let alone: Query = "SELECT pg_is_in_recovery() OR EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus')"
        guard try !connection.query(alone)[0].decode(Bool.self, at: 0) else { return nil }
        let id = try connection.query("SELECT pg_export_snapshot()")[0].decode(String.self, at: 0)
        return Query.setTransactionSnapshot(id)
    }

    /// Runs `body` in a read-only snapshot with an emitter that writes to `write` (`afterEachChunk` hears the
    /// rows read so far after each chunk), finishes the emitter, and returns the tally's report with the
    /// emitter's figures and the time taken: what every export and `get` share.
    func exporting(
        options: JSONTextWriter.Options, to write: (UnsafeBufferPointer<UInt8>) throws -> Void,
        afterEachChunk: (_ rows: Int) -> Void = { _ in }, _ body: (TreeEmitter, ExportTally) throws -> Void
    ) throws -> ExportReport {
        let clock = ContinuousClock()
        let started = clock.now
        let tally = ExportTally()
        try reads.readingSnapshot {
            // The emitter stores its sink, but neither it nor the closures outlive this call.
            try withoutActuallyEscaping(write) { write in
                try withoutActuallyEscaping(afterEachChunk) { afterEachChunk in
                    let emitter = TreeEmitter(options: options) { bytes in
                        tally.report.bytes += bytes.count
                        try write(bytes)
                        afterEachChunk(tally.report.rows)
                    }
                    try body(emitter, tally)
                    try emitter.finish()
                    tally.report.peakHeldBytes = emitter.peakFrameBytes
                    tally.report.spilledBytes = emitter.spilledBytes
                }
            }
        }
        tally.report.seconds = (clock.now - started).seconds
        return tally.report
    }

    /// Adds the rows of the node at `path` to `emitter`, in the caller's read-only transaction, which the
    /// export began itself when `readsShards` (on Citus, distributed tables read from their nodes:
    /// `ShardSessions`) holds; `helpers` are the sessions that may read ahead, and the snapshot they share.
    private func exportRows(
        at path: [String], shallow: Bool, helpers: (snapshot: HelpersSnapshot, count: Int)?, readsShards: Bool,
        into emitter: TreeEmitter, tally: ExportTally
    ) throws {
        // Typed rows go straight from libpq's buffers to the JSON when nothing can still fall inside them; that
        // is nearly every row, and the rest take the general way. Tables with nothing else under their root are
        // read as COPY blocks when the merge reaches their root, or ahead of it by helpers; a block asks itself
        // the one question its read needs (whether byte order misplaces a key), the other tables whether any
        // key needs RTDB order.
        let blocks = path.isEmpty && !shallow ? try copyBlocks() : []
        let ordered = try tablesWithOrderedRows(under: path, except: Set(blocks.map(\.table)))
        tally.report.sortedTables = ordered.map(\.name)
        defer {
            // With the blocks that sorted, in table order.
            let sorted = Set(tally.report.sortedTables)
            tally.report.sortedTables = TreeTable.allCases.map(\.name).filter(sorted.contains)
        }
        let shardPlan =
            try readsShards && !blocks.isEmpty ? ShardPlan.make(reading: blocks.map(\.table), on: connection) : nil
        let source = try blockSource(reading: shardPlan, tally: tally)
        let helperPlan: ShardPlan? = if case .shards = source { try shardPlan?.get() } else { nil }
        let scheduler = try helpers.flatMap {
            try readingAhead(
                blocks, helpers: min($0.count, blocks.count - 1), in: $0.snapshot, options: emitter.options,
                shards: helperPlan)
        }
        defer {
            if let scheduler {
                scheduler.finish()
                tally.report.sessions = 1 + scheduler.joinedHelpers
            }
        }
        var nextBlock = 0
        var merge = try openRows(at: path, excluding: Set(blocks.map(\.table)), ordered: ordered)
        defer { tally.close(&merge) }
        while true {
            let next = merge.next()
            if nextBlock < blocks.count,
                next.map({ FirebaseKey.exportPrecedes(blocks[nextBlock].table.rootKey ?? "", $0.rootKey) }) ?? true
            {
                let block = blocks[nextBlock]
                try merge.collectFetchInFlight()
                if let rendered = try scheduler?.take(nextBlock) {
                    try tally.add(rendered, as: block.table.rootKey ?? "", into: emitter)
                } else {
                    try block.render(from: source, into: emitter, asRoot: false, tally: tally)
                }
                nextBlock += 1
                continue
            }
            guard let stream = next else { break }
            tally.report.rows += 1
            try Self.add(stream, below: path, shallow: shallow, mayGrow: merge.nextRowMayGrow, to: emitter)
            try answerCountRequest(of: emitter, below: path, between: &merge)
            try merge.advance()
        }
    }

    /// Where the export's own session reads its blocks: on Citus, sessions on the nodes as `planned` says (when it
    /// could plan them and every node takes them; the tally says why not); otherwise its own connection.
    private func blockSource(
        reading planned: Result<ShardPlan, ShardPlan.Unavailable>?, tally: ExportTally
    ) throws -> CopyBlock.Source {
        guard let planned else { return .session(connection) }
        do {
            let shards = try planned.get().open()
            tally.report.shardNodes = shards.nodes.count
            return .shards(shards)
        } catch let unavailable as ShardPlan.Unavailable {
            tally.report.shardReadsUnavailable = unavailable.reason
            return .session(connection)
        } catch let error as StorageError where error.sqlState != .queryCanceled {
            tally.report.shardReadsUnavailable = error.description
            return .session(connection)
        }
    }

    /// Helpers reading `blocks` ahead in this transaction's snapshot, or nil where none can: fewer than one
    /// helper, or where `sharedSnapshot()` says none can share it and the nodes' shards are not read by `shards`.
    private func readingAhead(
        _ blocks: [CopyBlock], helpers: Int, in snapshot: HelpersSnapshot, options: JSONTextWriter.Options,
        shards: ShardPlan?
    ) throws -> BlockScheduler? {
        guard helpers > 0 else { return nil }
        if let shards {
            return BlockScheduler(blocks: blocks, options: options, helpers: helpers) { .shards(try shards.open()) }
        }
        let shared: Query? =
            switch snapshot {
            case .exportedHere: try sharedSnapshot()
            case .shared(let query): query
            }
        guard let snapshot = shared else { return nil }
        let open = connection.siblingOpener()
        return BlockScheduler(blocks: blocks, options: options, helpers: helpers) {
            try BlockScheduler.join(opening: open, snapshot: snapshot)
        }
    }

    /// Answers the emitter's question of how many children a node has, if it asked, once the FETCH in flight
    /// is in: the connection runs one statement at a time.
    func answerCountRequest(of emitter: TreeEmitter, below path: [String], between merge: inout PartMerge) throws {
        guard let relative = emitter.countRequest else { return }
        try merge.collectFetchInFlight()
        emitter.answerCountRequest(try childCountBound(of: path + relative))
    }

    /// At most how many children the node at `path` has: the rows under it (each child has one at least); nil
    /// for the root and for a node inside a record (small, and not worth a query).
    func childCountBound(of path: [String]) throws -> Int? {
        guard let root = path.first else { return nil }
        var total = 0
        for table in TreeTable.tables(under: root) {
            guard path.count - 1 < table.keyDepth else { return nil }
            let query: Query =
                "SELECT count(*) FROM \(identifier: table.name) WHERE \(table.keyConditions(path.dropFirst()))"
            total += try connection.query(query)[0].decode(Int.self, at: 0)
        }
        let unmapped: Query = "SELECT count(*) FROM unmapped_values WHERE \(TreeTable.unmappedRange(at: path))"
        return total + (try connection.query(unmapped)[0].decode(Int.self, at: 0))
    }

    /// Of the typed tables under the node at `path`, those holding a key there that needs `rtdb_key_order` (asked
    /// of each table's partial index): the others are read in primary-key order alone. The question is asked of
    /// the node's rows only (below a root, on Citus, of the shard its first key is placed on), and not at all
    /// where the path's keys settle it: one of them needs that order (every row there does), or they fix one row
    /// (whose fields are not ordered by key). The tables in `known` are not asked about.
    func tablesWithOrderedRows(under path: [String] = [], except known: Set<TreeTable> = []) throws -> Set<TreeTable> {
        var tables = Set<TreeTable>()
        let candidates = path.first.map(TreeTable.tables(under:)) ?? TreeTable.allCases
        for table in candidates where table != .unmappedValues && !known.contains(table) {
            let fixed = Array(path.dropFirst().prefix(table.keyDepth))
            if fixed.contains(where: FirebaseKey.needsOrder) {
                tables.insert(table)
            } else if fixed.count < table.keyDepth,
                try connection.query(table.orderedRowsQuery(under: fixed))[0].decode(Bool.self, at: 0)
            {
                tables.insert(table)
            }
        }
        return tables
    }
}

/// A typed table that a whole-tree export reads with one `COPY (SELECT … ORDER BY …) TO STDOUT` instead of
/// cursors: nothing else lies under its root (no unmapped values, no other table's rows), so its rows are one run
/// of the output, in primary-key order, or sorted by `rtdb_key_order` when some key sits elsewhere in byte order.
