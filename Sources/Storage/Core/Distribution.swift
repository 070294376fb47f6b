internal import PostgresClient

/// How the store's tables are placed on a Citus cluster (shared/distributed-postgres.md), and how they are
/// placed now.
///
/// Tables of one co-location group keep the rows of one distribution value on the same worker, so that the
/// app's operations on one user (their posts, follows, timeline and chat copies) run on one node.
public enum TablePlacement: Sendable, Equatable {
    /// Sharded by `column`, co-located with `colocateWith` (nil: the table leads its own group).
    case distributed(column: String, colocateWith: String?)
    /// Copied whole to every node.
    case reference
}

/// One table's place in `Store.distributionPlan`.
public struct PlannedTable: Sendable, Equatable {
    /// The table's name.
    public var name: String
    /// Where its rows go.
    public var placement: TablePlacement
}

/// What kind of server the store is on, for Citus.
public enum ServerRole: Sendable, Equatable {
    /// PostgreSQL without the citus extension in this database.
    case plain
    /// A Citus coordinator (or a Citus node not yet part of a cluster): the node to run the console on.
    case coordinator
    /// A Citus worker: it answers queries, but the console must go through the coordinator.
    case worker
}

/// A table as Citus has placed it.
public struct PlacedTable: Sendable, Equatable {
    /// The table's name.
    public var name: String
    /// "distributed" or "reference" (Citus's own words for the table type).
    public var kind: String
    /// The distribution column; nil for a reference table.
    public var column: String?
    /// The co-location group's id: tables with the same id keep equal distribution values together.
    public var colocationID: Int
    /// How many shards the table has.
    public var shardCount: Int
}

/// Where the store stands with Citus: what `status` shows and what `distribute` starts from.
public struct DistributionState: Sendable {
    /// Plain PostgreSQL, coordinator or worker.
    public var role: ServerRole
    /// The citus extension's version, when installed in this database.
    public var citusVersion: String?
    /// Active primary workers the coordinator knows (0 on plain PostgreSQL).
    public var workerCount: Int
    /// The store's tables Citus has distributed or replicated, in `Store.distributionPlan` order.
    public var tables: [PlacedTable]

    /// Whether every table of the plan is placed.
    public var isDistributed: Bool {
        PlannedTable.plan.allSatisfy { planned in tables.contains { $0.name == planned.name } }
    }
}
