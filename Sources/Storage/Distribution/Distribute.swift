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

/// Placing the store's tables on the Citus cluster.
extension Distribution {
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
            return try PlannedTable.plan.map { planned in
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
