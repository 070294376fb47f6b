internal import PostgresClient

/// Citus: where the store's tables are placed (`distribute`, in Distribution/, places them).
struct Distribution {
    /// The connection to the coordinator.
    let connection: StoreConnection
    /// Held while tables move, so that no check, repair or import runs meanwhile.
    let maintenance: MaintenanceLock

    /// `Store.distributionState`: see there.
    func distributionState() throws -> DistributionState {
        let version = try connection.query("SELECT extversion FROM pg_extension WHERE extname = 'citus'").first
        guard let version else {
            return DistributionState(role: .plain, citusVersion: nil, workerCount: 0, tables: [])
        }
        // A worker's local group is its own (> 0); the coordinator's, and a node's that joined no cluster, is 0.
        let node = try connection.query(
            """
            SELECT (SELECT groupid FROM pg_dist_local_group) > 0,
                (SELECT count(*) FROM pg_dist_node WHERE noderole = 'primary' AND isactive AND groupid <> 0)
            """)[0]
        let isWorker = try node.decode(Bool.self, at: 0)
        var tables: [PlacedTable] = []
        if !isWorker {
            let names = PlannedTable.plan.map(\.name)
            for row in try connection.query(
                """
                SELECT p.name, t.citus_table_type, nullif(t.distribution_column, '<none>'), t.colocation_id,
                    t.shard_count
                FROM unnest(\(names)) WITH ORDINALITY AS p(name, position)
                JOIN citus_tables t ON t.table_name = to_regclass(p.name)
                ORDER BY p.position
                """)
            {
                tables.append(
                    PlacedTable(
                        name: try row.decode(String.self, at: 0), kind: try row.decode(String.self, at: 1),
                        column: try row.decode(String?.self, at: 2), colocationID: try row.decode(Int.self, at: 3),
                        shardCount: try row.decode(Int.self, at: 4)))
            }
        }
        return DistributionState(
            role: isWorker ? .worker : .coordinator, citusVersion: try version.decode(String.self, at: 0),
            workerCount: try node.decode(Int.self, at: 1), tables: tables)
    }

    /// Whether the store's tables are distributed (by the plan's first table), asked of Citus's catalog alone:
    /// `distributionState` reads `citus_tables`, which measures every shard over connections of its own, and
    /// those wait forever on a table this transaction truncated.
    func isDistributed() throws -> Bool {
        try Self.isDistributed(on: connection)
    }

    /// `isDistributed()` on any connection of the store's (a read asks before its transaction begins).
    static func isDistributed(on connection: StoreConnection) throws -> Bool {
        let hasCatalog = try connection.query("SELECT to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL")[0]
        guard try hasCatalog.decode(Bool.self, at: 0) else { return false }
        return try !connection.query("SELECT 1 FROM pg_dist_partition WHERE logicalrelid = to_regclass('users')")
            .isEmpty
    }

    /// Fails when this server is a Citus worker: it answers queries, but its own tables are shards, and the
    /// store's bookkeeping lives on the coordinator. Names the coordinator when the worker knows it.
    func refuseWorker() throws {
        guard try distributionState().role == .worker else { return }
        let coordinator = try connection.query("SELECT nodename, nodeport FROM pg_dist_node WHERE groupid = 0 LIMIT 1")
            .first
            .map { "\(try $0.decode(String.self, at: 0)):\(try $0.decode(Int.self, at: 1))" }
        throw StorageError(
            .distribution, "\(connection.endpoint) is a Citus worker; the store is operated through its coordinator",
            hint: coordinator.map { "Connect to the coordinator at \($0)." }
                ?? "Connect to the cluster's coordinator."
        ).remedied(.useAnotherServer)
    }
}
