import FirebaseTree
import Foundation
internal import PostgresClient

/// COPY costs the server about half of what FETCH from a cursor does (FETCH goes through a tuplestore), but holds
/// the connection until done, so a block is read whole when the merge reaches its root.
struct CopyBlock {
    var table: TreeTable
    var statement: Query
    /// The table's rows, counted when its keys include array indexes (see `TreeEmitter.childCountBound`).
    var rowCount: Int?
}

extension TreeExport {
    /// The tables a whole-tree export can read as `CopyBlock`s, in export order of their roots.
    func copyBlocks(ordered: Set<TreeTable>) throws -> [CopyBlock] {
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
            // The whole-table SELECT has no parameters (COPY takes none), only quoted identifiers and constants.
            let columns = Query.identifiers(table.exportedColumns)
            // Keys that byte order misplaces (integers, characters from U+E000) make the block sort by RTDB order;
            // digit-led text keys alone do not.
            let sorts =
                try ordered.contains(table) && connection.query(table.misorderedRowsQuery())[0].decode(Bool.self, at: 0)
            let order = table.keyColumns.map { sorts ? table.orderExpression($0) : "\(identifier: $0)" }
                .joined(separator: ", ")
            let rowCount =
                sorts
                ? try connection.query("SELECT count(*) FROM \(identifier: table.name)")[0].decode(Int.self, at: 0)
                : nil
            let statement: Query = "COPY (SELECT \(columns) FROM \(identifier: table.name) ORDER BY \(order)) TO STDOUT"
            blocks.append(CopyBlock(table: table, statement: statement, rowCount: rowCount))
        }
        // Typed tables, each with its root key.
        return blocks.sorted { FirebaseKey.exportPrecedes($0.table.rootKey ?? "", $1.table.rootKey ?? "") }
    }

    /// Writes a block's rows as a whole-tree export does.
    func copy(_ block: CopyBlock, into emitter: TreeEmitter, tally: ExportTally) throws {
        var row = CopyRow()
        var parent: [String] = []
        var repeatedLikes = RepeatedLikeFilter()
        let table = block.table
        try connection.copyOut(block.statement) { line in
            row.read(line)
            if table == .postLikes, repeatedLikes.repeats(row) { return }
            do {
                parent = try table.parentPath(of: row, reusing: parent).parent
                if try !emitter.addDirectly(row, of: table, under: parent) {
                    let part = try table.part(from: row)
                    if let value = part.value { try emitter.add(part.path, value) }
                }
            } catch let error as StorageError {
                throw error.adding(context: "exporting \(table.name)")
            }
            tally.report.rows += 1
            tally.report.rowsFetched += 1
            // The connection is busy until the COPY ends: only the block's own count, taken before, is known.
            if let relative = emitter.countRequest {
                emitter.answerCountRequest(relative == [table.rootKey ?? ""] ? block.rowCount : nil)
            }
        }
    }
}
