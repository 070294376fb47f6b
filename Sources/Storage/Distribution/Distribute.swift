internal import PostgresClient

/// What `Store.distribute` did to one table.
public struct DistributedTable: Sendable, Equatable {
    /// The table's name.
    public var name: String
    /// Where the plan puts it.
    public var placement: TablePlacement
    /// False when the table was already placed so (distribute is idempotent).
    public var changed: Bool
}

/// Citus: where the store's tables are placed, and placing them (`distribute`).
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
            let names = Store.distributionPlan.map(\.name)
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

    /// `Store.distribute`: see there.
    func distribute(shardCount: Int? = nil, wait: MaintenanceWait = .none) throws -> [DistributedTable] {
        let state = try distributionState()
        switch state.role {
        case .plain:
            throw StorageError(
                .distribution,
                "\(connection.endpoint) is not a Citus coordinator: this database has no citus extension",
                hint: "Distributing needs Citus: CREATE EXTENSION citus on the coordinator and on every worker, "
                    + "then add the workers with citus_add_node.")
        case .worker:
            try refuseWorker()
        case .coordinator where state.workerCount == 0:
            throw StorageError(
                .distribution, "the Citus coordinator \(connection.endpoint) has no active workers",
                hint: "Add them first: SELECT citus_add_node('host', port) for each worker.")
        case .coordinator:
            break
        }
        if let shardCount, !(1...64000).contains(shardCount) {
            throw StorageError(.refused, "a shard count must be between 1 and 64000, not \(shardCount)")
        }
        return try connection.withTransaction {
            try maintenance.take(wait: wait)
            // Creating shards and copying rows over several connections, then reading them in the same
            // transaction, needs one connection per worker.
            try connection.execute("SET LOCAL citus.multi_shard_modify_mode = 'sequential'")
            // Read again under the lock: another console may have distributed tables meanwhile.
            let placedTables = try distributionState().tables
            return try Store.distributionPlan.map { planned in
                let placed = placedTables.first { $0.name == planned.name }
                if let placed {
                    try Self.check(placed, against: planned)
                    return DistributedTable(name: planned.name, placement: planned.placement, changed: false)
                }
                try place(planned, shardCount: shardCount)
                return DistributedTable(name: planned.name, placement: planned.placement, changed: true)
            }
        }
    }

    private func place(_ table: PlannedTable, shardCount: Int?) throws {
        try Self.place(table.name, table.placement, shardCount: shardCount, on: connection)
        // The rows were copied to the shards; the coordinator's own copy is invisible from now on and only
        // takes space.
        try connection.execute("SELECT truncate_local_data_after_distributing_table(\(table.name)::regclass)")
    }

    /// Places the table `name` (as `regclass` reads it) as `placement` says; a table that leads its group takes
    /// `shardCount` shards (nil: `citus.shard_count`).
    static func place(
        _ name: String, _ placement: TablePlacement, shardCount: Int?, on connection: StoreConnection
    ) throws {
        switch placement {
        case .reference:
            try connection.execute("SELECT create_reference_table(\(name)::regclass)")
        case .distributed(let column, let group?):
            try connection.execute(
                "SELECT create_distributed_table(\(name)::regclass, \(column), colocate_with => \(group))")
        case .distributed(let column, nil):
            let shards: Query = shardCount.map { ", shard_count => \($0)::int" } ?? ""
            try connection.execute(
                "SELECT create_distributed_table(\(name)::regclass, \(column), colocate_with => 'none'\(shards))")
        }
    }

    private static func check(_ placed: PlacedTable, against planned: PlannedTable) throws {
        let matches =
            switch planned.placement {
            case .reference: placed.kind == "reference"
            case .distributed(let column, _): placed.kind == "distributed" && placed.column == column
            }
        guard !matches else { return }
        let now = placed.column.map { "\(placed.kind), by \($0)" } ?? placed.kind
        let plan =
            switch planned.placement {
            case .reference: "a reference table"
            case .distributed(let column, _): "distributed by \(column)"
            }
        throw StorageError(
            .distribution, "\(placed.name) is \(now), but the plan makes it \(plan)",
            hint: "Undo it with SELECT undistribute_table('\(placed.name)'), then distribute again.")
    }
}
