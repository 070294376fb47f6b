import FirebaseTree
import Foundation
internal import PostgresClient

/// A typed table that a whole-tree export reads with one `COPY (SELECT … ORDER BY …) TO STDOUT` instead of
/// cursors: nothing else lies under its root (no unmapped values, no other table's rows), so its rows are one run
/// of the output, in primary-key order, or sorted by `rtdb_key_order` when some key sits elsewhere in byte order.
///
/// COPY costs the server about half of what FETCH from a cursor does (FETCH goes through a tuplestore), but holds
/// the connection until done, so a block is read whole when the merge reaches its root, or ahead of it on another
/// session (`BlockScheduler`).
struct CopyBlock {
    var table: TreeTable

    /// Where a block's rows are read.
    enum Source {
        /// A session in the export's snapshot: one server's, or a Citus coordinator's.
        case session(StoreConnection)
        /// On Citus, sessions on the nodes that hold the table's shards, in the export's snapshot there.
        case shards(ShardSessions)

        /// Ends a helper's transactions (its sessions close when released).
        func end() {
            switch self {
            case .session(let connection): _ = try? connection.execute("ROLLBACK")
            case .shards(let shards): for node in shards.nodes { _ = try? node.session.execute("ROLLBACK") }
            }
        }
    }

    /// Whether the block sorts by RTDB order, and then the table's rows counted (its keys may include array
    /// indexes: see `TreeEmitter.countRequest`), asked of `source` in the export's snapshot.
    private func plan(from source: Source) throws -> (sorts: Bool, rowCount: Int?) {
        // Keys that byte order misplaces (integers, characters from U+E000) make the block sort by RTDB order;
        // digit-led text keys alone do not. Asked of the key-order index by whoever reads the block (on Citus a
        // question to every shard, whose planning is most of its cost: not asked twice).
        switch source {
        case .session(let connection):
            guard try connection.query(table.misorderedRowsQuery())[0].decode(Bool.self, at: 0) else {
                return (false, nil)
            }
            return (
                true, try connection.query("SELECT count(*) FROM \(identifier: table.name)")[0].decode(Int.self, at: 0)
            )
        case .shards(let shards):
            let keys = Query.identifiers(table.keyColumns[...])
            // A row where some node holds a misplaced key (the condition pushed into each shard's scan).
            let answers = try shards.ask(about: table) { shards in
                """
                SELECT 1 FROM (\(ShardMerge.scans(of: shards, columns: keys))) AS shards
                WHERE \(table.misorderedCondition) LIMIT 1
                """
            }
            guard answers.contains(where: { !$0.isEmpty }) else { return (false, nil) }
            let counts = try shards.ask(about: table) { shards in
                "SELECT count(*) FROM (\(ShardMerge.scans(of: shards, columns: keys))) AS shards"
            }
            return (true, try counts.reduce(0) { $0 + (try $1[0].decode(Int.self, at: 0)) })
        }
    }

    /// Writes the block's rows, read from `source`, into `emitter`: an emitter of the whole tree, or with `asRoot`
    /// one whose root is the block's node (its value rendered apart). Counts what it read in `tally`; `isAbandoned`
    /// stops it between rows.
    func render(
        from source: Source, into emitter: TreeEmitter, asRoot: Bool, tally: ExportTally,
        isAbandoned: () -> Bool = { false }
    ) throws {
        let (sorts, rowCount) = try plan(from: source)
        if sorts { tally.report.sortedTables.append(table.name) }
        var rows = BlockRows(table: table, asRoot: asRoot)
        let blockNode = asRoot ? [] : [table.rootKey ?? ""]
        // The row goes by reference: a copy would retain its buffers, row after row.
        func add(_ row: inout CopyRow) throws {
            if isAbandoned() { throw BlockScheduler.Abandoned() }
            do {
                try rows.add(&row, to: emitter)
            } catch let error as StorageError {
                throw error.adding(context: "exporting \(table.name)")
            }
            tally.report.rows += 1
            tally.report.rowsFetched += 1
            // The connections are busy until the COPY ends: only the block's own count, taken before, is known.
            if let relative = emitter.countRequest {
                emitter.answerCountRequest(relative == blockNode ? rowCount : nil)
            }
        }
        switch source {
        case .session(let connection):
            // The whole-table SELECT has no parameters (COPY takes none), only quoted identifiers and constants.
            let columns = Query.identifiers(table.exportedColumns)
            var row = CopyRow()
            try connection.copyOut(
                "COPY (SELECT \(columns) FROM \(identifier: table.name) ORDER BY \(table.keyOrder(rtdbOrder: sorts))) TO STDOUT"
            ) {
                line in
                row.read(line)
                try add(&row)
            }
        case .shards(let shards):
            try ShardMerge(table: table, sortsByRTDBOrder: sorts).forEachRow(from: shards, add)
        }
    }
}

/// What rendering a block carries from one row to the next. Most rows share their parent with the row before:
/// that is found by comparing the parent's key columns as bytes, and the parent's path of strings is made only
/// when it changes (rendering a row then retains nothing per row but what the emitter writes).
private struct BlockRows {
    let table: TreeTable
    let asRoot: Bool
    var repeatedLikes = RepeatedLikeFilter()
    var parentKeys = KeyColumnBytes()
    var parent: [String] = []
    /// `parent` as the emitter sees it: without the root when the block is rendered as the root.
    var emitterParent: [String] = []

    init(table: TreeTable, asRoot: Bool) {
        self.table = table
        self.asRoot = asRoot
    }

    /// Adds a COPY line's row to `emitter`.
    mutating func add(_ row: inout CopyRow, to emitter: TreeEmitter) throws {
        if table == .postLikes, repeatedLikes.repeats(row) { return }
        if !parentKeys.matchOrKeep(row, columns: table.keyDepth - 1) {
            parent = try table.parentPath(of: row, reusing: parent).parent
            emitterParent = asRoot ? Array(parent.dropFirst()) : parent
        }
        if try !emitter.addDirectly(row, of: table, under: emitterParent) {
            let part = try table.part(from: row)
            if let value = part.value { try emitter.add(Array(part.path.dropFirst(asRoot ? 1 : 0)), value) }
        }
    }
}

extension TreeExport {
    /// The tables a whole-tree export can read as `CopyBlock`s, in export order of their roots.
    func copyBlocks() throws -> [CopyBlock] {
        var blocks: [CopyBlock] = []
        for table in TreeTable.allCases {
            guard let root = table.rootKey else { continue }
            guard
                try !connection.query("SELECT \(Query.anyRow(in: "unmapped_values", where: "root = \(root)"))")[0]
                    .decode(Bool.self, at: 0)
            else { continue }
            var sharesRoot = false
            for other in TreeTable.tables(under: root) where other != table {
                sharesRoot = try connection.query("SELECT \(Query.anyRow(in: other.name))")[0]
                    .decode(Bool.self, at: 0)
                if sharesRoot { break }
            }
            guard !sharesRoot else { continue }
            blocks.append(CopyBlock(table: table))
        }
        // Typed tables, each with its root key.
        return blocks.sorted { FirebaseKey.exportPrecedes($0.table.rootKey ?? "", $1.table.rootKey ?? "") }
    }
}
