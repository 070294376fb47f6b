import Foundation
import PostgresClient

/// One table's size around a `VACUUM`.
public struct VacuumedTable: Sendable {
    /// The table.
    public var table: String
    /// Bytes on disk (heap, indexes and TOAST) before and after.
    public var bytesBefore: Int
    public var bytesAfter: Int
}

extension Store {
    /// `VACUUM (ANALYZE)` of each of the tree's tables, or `VACUUM FULL` (which rewrites each table, needs room
    /// for the copy, and locks it meanwhile): gives back the space of deleted and rolled-back rows, such as a
    /// failed import's, and refreshes the planner's statistics. Runs outside any transaction, table by table.
    public func vacuum(full: Bool = false) throws -> [VacuumedTable] {
        var tables: [VacuumedTable] = []
        for table in Store.treeTables {
            let before = try size(of: table)
            let options: Query = full ? "FULL, ANALYZE" : "ANALYZE"
            try connection.execute("VACUUM (\(options)) \(identifier: table)")
            tables.append(VacuumedTable(table: table, bytesBefore: before, bytesAfter: try size(of: table)))
        }
        return tables
    }

    private func size(of table: String) throws -> Int {
        try connection.query("SELECT pg_total_relation_size(\(Query.quoted(identifier: table))::regclass)")[0]
            .decode(Int.self, at: 0)
    }
}
