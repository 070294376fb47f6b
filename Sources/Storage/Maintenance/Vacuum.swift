import Foundation
internal import PostgresClient

/// One table's size around a `VACUUM`.
public struct VacuumedTable: Sendable {
    /// The table.
    public var table: String
    /// Bytes on disk (heap, indexes and TOAST) before.
    public var bytesBefore: Int
    /// Bytes on disk after.
    public var bytesAfter: Int
}

/// VACUUM (or VACUUM FULL) of the store's tables, reporting what each gave back.
struct Vacuum {
    /// The connection that runs it.
    let connection: StoreConnection
    /// Which tables are on Citus, whose sizes are their shards'.
    let distribution: Distribution

    /// `Store.vacuum`: see there.
    func vacuum(full: Bool = false) throws -> [VacuumedTable] {
        let placed = Set(try distribution.distributionState().tables.map(\.name))
        var tables: [VacuumedTable] = []
        for table in Store.treeTables + Store.lookupTables {
            let isPlaced = placed.contains(table)
            let before = try size(of: table, isPlaced: isPlaced)
            let options: Query = full ? "FULL, ANALYZE" : "ANALYZE"
            try connection.execute("VACUUM (\(options)) \(identifier: table)")
            tables.append(
                VacuumedTable(table: table, bytesBefore: before, bytesAfter: try size(of: table, isPlaced: isPlaced)))
        }
        return tables
    }

    /// A local table's size, or a Citus table's over all its shards (the coordinator's own table is empty).
    private func size(of table: String, isPlaced: Bool) throws -> Int {
        let name = Query.quoted(identifier: table)
        let query: Query =
            isPlaced
            ? "SELECT citus_total_relation_size(\(name)::regclass)" : "SELECT pg_total_relation_size(\(name)::regclass)"
        return try connection.query(query)[0].decode(Int.self, at: 0)
    }
}
