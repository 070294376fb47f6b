import FirebaseTree
import Foundation

extension Store {
    /// Plain PostgreSQL, a Citus coordinator or a Citus worker, and how the store's tables are placed.
    public func distributionState() throws -> DistributionState {
        try distribution.distributionState()
    }

    /// Places the store's tables on the Citus cluster as `Store.distributionPlan` says, moving their rows to the
    /// workers, in one transaction. Tables already placed so are left as they are, so running it again is
    /// harmless; a table placed otherwise is refused, as is a server that is not a Citus coordinator with workers.
    /// `shardCount` applies to the tables that lead a co-location group (nil: Citus's `citus.shard_count`).
    public func distribute(shardCount: Int? = nil, wait: MaintenanceWait = .none) throws -> [DistributedTable] {
        try distribution.distribute(shardCount: shardCount, wait: wait)
    }
}
