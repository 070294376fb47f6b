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

/// What `Store.dropImportLeftovers` did.
public struct LeftoverDrop: Sendable {
    /// Leftovers of parallel imports that never finished, dropped.
    public var dropped: [ImportLeftover] = []
    /// Leftovers kept because the maintenance lock was held (an import may be loading into them).
    public var kept: [ImportLeftover] = []
    /// Who held the maintenance lock when leftovers were kept.
    public var lockHolder: LockHolder?
}

/// VACUUM (or VACUUM FULL) of the store's tables, reporting what each gave back; and the drop of what parallel
/// imports that never finished left behind.
struct Vacuum {
    /// The connection that runs it.
    let connection: StoreConnection
    /// Which tables are on Citus, whose sizes are their shards'.
    let distribution: Distribution
    /// Held while leftovers are dropped: an import holds it for as long as its sessions' schemas are in use.
    let maintenance: MaintenanceLock

    /// `Store.vacuum`: see there.
    func vacuum(full: Bool = false) throws -> [VacuumedTable] {
        let placed = Set(try distribution.distributionState().tables.map(\.name))
        var tables: [VacuumedTable] = []
        for table in TreeTable.names + TreeTable.lookupNames {
            let isPlaced = placed.contains(table)
            let before = try size(of: table, isPlaced: isPlaced)
            let options: Query = full ? "FULL, ANALYZE" : "ANALYZE"
            try connection.execute("VACUUM (\(options)) \(identifier: table)")
            tables.append(
                VacuumedTable(table: table, bytesBefore: before, bytesAfter: try size(of: table, isPlaced: isPlaced)))
        }
        return tables
    }

    /// `Store.dropImportLeftovers`: see there.
    func dropLeftovers() throws -> LeftoverDrop {
        var report = LeftoverDrop()
        try connection.withTransaction {
            let leftovers = try SideTables.leftovers(on: connection)
            guard !leftovers.isEmpty else { return }
            do {
                try maintenance.take()
            } catch let error as StorageError where error.sqlState == .lockNotAvailable {
                report.kept = leftovers
                report.lockHolder = try maintenance.holder()
                return
            }
            // Listed again under the lock: an import that finished meanwhile took its own away.
            let dropped = try SideTables.leftovers(on: connection)
            for leftover in dropped { try SideTables.dropHelper(leftover.name, on: connection) }
            report.dropped = dropped
        }
        return report
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
