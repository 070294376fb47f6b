internal import PostgresClient

/// What `status` reports: the server, the connection, the schema and how much data each table holds.
public struct StoreStatus: Sendable {
    /// The server's version string.
    public var serverVersion: String
    /// Where the connection goes (no password).
    public var endpoint: Endpoint
    /// The last applied migration's number (0 when none).
    public var schemaVersion: Int
    /// The last applied migration's file name, if any.
    public var schemaFile: String?
    /// Migrations of this binary the database does not have yet.
    public var pendingMigrations: [String]
    /// Rows per table: the tree's in `Store.treeTables` order, their lookups, the Auth accounts and providers;
    /// empty until the schema exists.
    public var tableRows: [(table: String, rows: Int)]
    /// Whether the server is plain PostgreSQL or a Citus coordinator, and how the tables are placed.
    public var distribution: DistributionState
    /// On a distributed store, whether this role's reads hold distributed commits back while every node takes its
    /// snapshot (a superuser, or a role granted EXECUTE on `hold_distributed_commits()`), so that each read is one
    /// instant; nil on one server, or when the schema is behind this binary's (the counts read without it).
    public var readsHoldDistributedCommits: Bool?
    /// Schemas parallel imports' sessions loaded into: a running import's, or leftovers of one that never finished,
    /// which `vacuum` (or the next whole-tree import) drops.
    public var importLeftovers: [ImportLeftover] = []
    /// Whether an import holds the maintenance lock (its sessions' schemas are in use).
    public var isImportRunning = false
    /// The last mirror's progress (migration 0025), nil when none ever ran or the schema is behind.
    public var mirror: MirrorStatus?
}

/// `status`: what the store holds and how it stands, read in one instant.
struct StatusReading {
    /// The connection that reads.
    let connection: StoreConnection
    /// Reads of one instant.
    let reads: Reads
    /// Who holds the maintenance lock (a running import).
    let maintenance: MaintenanceLock
    /// Where the tables are placed on Citus.
    let distribution: Distribution

    /// `Store.status`, the schema standing at `state`.
    func status(at state: MigrationState) throws -> StoreStatus {
        var tableRows: [(table: String, rows: Int)] = []
        if state.schemaVersion > 0 {
            // The lookups kept beside the tree's tables too, once the schema has them (migration 0015), and the
            // Auth accounts (0024) but their secrets, which a reader may not see; in this order whatever order the
            // server answers in.
            let tables =
                TreeTable.names
                + (state.pending.isEmpty ? TreeTable.lookupNames + ["auth_accounts", "auth_providers"] : [])
            let counts = tables.map { "SELECT \($0), count(*) FROM \(identifier: $0)" as Query }
            let count = {
                var counted: [String: Int] = [:]
                for row in try self.connection.query(counts.joined(separator: " UNION ALL ")) {
                    counted[try row.decode(String.self, at: 0)] = try row.decode(Int.self, at: 1)
                }
                tableRows = tables.compactMap { table in counted[table].map { (table, $0) } }
            }
            // A schema behind this binary's may lack tables the read locks; one statement is one instant anyway,
            // only without saying whom it waits for.
            if state.pending.isEmpty { try reads.readingSnapshot(count) } else { try count() }
        }
        let distribution = try distribution.distributionState()
        let leftovers = try SideTables.leftovers(on: connection)
        let isImportRunning = try !leftovers.isEmpty && maintenance.holder()?.isImport == true
        let mirror =
            state.pending.isEmpty && state.schemaVersion > 0
            ? try MirrorProgressRow(connection: connection).read() : nil
        return StoreStatus(
            serverVersion: connection.serverVersion, endpoint: connection.endpoint,
            schemaVersion: state.schemaVersion, schemaFile: state.applied.last?.fileName,
            pendingMigrations: state.pending.map(\.fileName), tableRows: tableRows, distribution: distribution,
            readsHoldDistributedCommits: distribution.isDistributed && state.schemaVersion > 0 && state.pending.isEmpty
                ? !connection.commitBarrier.isRefused : nil, importLeftovers: leftovers,
            isImportRunning: isImportRunning, mirror: mirror)
    }
}
