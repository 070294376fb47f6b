import Foundation
internal import PostgresClient

/// On Citus, sessions of a read's own on the nodes that hold its tables' shards, each in the snapshot the read's
/// transaction holds on that node: a whole-tree export reads the shards there, without the coordinator in the way.
///
/// Through the coordinator, each row of a table's `COPY` is received, kept and sorted by the coordinator and then
/// sent again: of the 1.38 s a 432,606-row timeline took, 1.3 s was that gathering (BENCHMARKS-LOG.md). A distributed
/// read's transaction holds one connection a worker, each with that worker's snapshot taken at one instant
/// (`ClusterSnapshot`), and a query Citus routes to one shard runs on it: `pg_export_snapshot()` there names that
/// snapshot, and a session opened on the node imports it (`SET TRANSACTION SNAPSHOT`), as `pg_dump -j`'s sessions
/// import their leader's. Each node then sends its shards of a table merged in key order by their own indexes
/// (one statement, a Merge Append), the nodes at once, and `ShardMerge` merges the nodes' streams: the rows, and
/// their order, of the coordinator's `ORDER BY`.
///
/// The sessions see exactly what the read's transaction sees on each node (the same snapshot), so a read may take
/// some tables through the coordinator and the rest from the nodes, and several sets of sessions (a parallel
/// export's helpers) may read at once. The read's transaction holds the tables' locks, so no distributed TRUNCATE
/// or DROP reaches a shard meanwhile; each session locks its shards too (without waiting), so that a shard moved
/// away is not dropped under it.
///
/// Opening needs each node to accept a connection from the console with the role, password and options of the
/// store's own session (as Citus itself connects); where one does not, the read goes through the coordinator.
final class ShardSessions {
    /// One node's session and the shards on it of each table read.
    struct Node {
        let session: StoreConnection
        let shards: [TreeTable: [ShardPlan.Shard]]
    }

    /// The nodes holding shards of the tables, in group order.
    let nodes: [Node]

    fileprivate init(nodes: [Node]) {
        self.nodes = nodes
    }

    /// Runs the statement `statement` makes of each node's shards of `table` on every node holding some, all at
    /// once, and returns their results in node order.
    func ask(about table: TreeTable, _ statement: ([ShardPlan.Shard]) -> Query) throws -> [StoreResult] {
        var sent: [(StoreConnection, Query)] = []
        for node in nodes {
            guard let shards = node.shards[table], !shards.isEmpty else { continue }
            let query = statement(shards)
            try node.session.sendWithoutWaiting(query)
            sent.append((node.session, query))
        }
        return try sent.map { session, query in try session.receive(query) }
    }
}

/// Where a distributed read's shards lie and which snapshot each node's sessions import: what opening
/// `ShardSessions` needs, on any thread and as often as a parallel read has helpers.
struct ShardPlan: Sendable {
    /// A shard's table on its node, as `schema.name`.
    struct Shard: Sendable {
        let schema: String
        let name: String
    }

    /// What one node's sessions are opened with.
    struct NodePlan: Sendable {
        /// Where the node is, for messages.
        let address: String
        let open: @Sendable () throws -> StoreConnection
        /// The import of the read's snapshot on the node.
        let setSnapshot: Query
        let shards: [TreeTable: [Shard]]
    }

    let nodes: [NodePlan]
    /// The reading session's `lock_timeout`, which the node sessions keep.
    let lockTimeout: String

    /// The plan for reading the shards of `tables` in the snapshot of `connection`'s transaction; nil on one server;
    /// why not when one of `tables` is not distributed by hash, when a shard has no active placement on a primary
    /// node (Citus, not this, then says what to do), or when no key routes a query to a node. Only inside a transaction
    /// that `ClusterSnapshot` began, which keeps one connection a node: another connection of the transaction would
    /// hold another snapshot.
    static func make(reading tables: [TreeTable], on connection: StoreConnection) throws -> Result<
        ShardPlan, Unavailable
    >? {
        guard try Distribution.isDistributed(on: connection) else { return nil }
        let placements = try shardPlacements(of: tables, on: connection)
        let unplaced = tables.filter { table in !placements.contains { $0.table == table } }
        guard unplaced.isEmpty else {
            let names = unplaced.map(\.name).joined(separator: ", ")
            return .failure(Unavailable(reason: "\(names) not distributed by hash"))
        }
        let shardCount = try connection.query(
            "SELECT count(*) FROM pg_dist_shard WHERE logicalrelid = ANY (\(tables.map(\.name))::regclass[])"
        )[0].decode(Int.self, at: 0)
        guard placements.count == shardCount else {
            return .failure(
                Unavailable(
                    reason: "\(shardCount - placements.count) of the tables' shards have no active placement on a "
                        + "primary node"))
        }
        let groups = Array(Set(placements.map(\.group))).sorted()
        let routes = try snapshotRoutes(to: groups, on: connection)
        var nodes: [NodePlan] = []
        for group in groups {
            guard let route = routes[group] else {
                let names = routedTables.map(\.name).joined(separator: ", ")
                return .failure(Unavailable(reason: "no key of \(names) leads a query to node group \(group)"))
            }
            // The snapshot the transaction holds on the node, exported by its connection there.
            let snapshot = try connection.query(
                """
                SELECT count(*), pg_export_snapshot() FROM \(identifier: route.table.name)
                WHERE \(identifier: route.column) = \(route.key)
                """
            )[0].decode(String.self, at: 1)
            guard let setSnapshot = Query.setTransactionSnapshot(snapshot) else {
                return .failure(Unavailable(reason: "node group \(group) exported a snapshot named \"\(snapshot)\""))
            }
            let held = placements.filter { $0.group == group }
            let node = held[0]
            nodes.append(
                NodePlan(
                    address: "\(node.host):\(node.port)",
                    // The coordinator's own shards are read on another session of the store's own server.
                    open: group == 0
                        ? connection.siblingOpener() : connection.siblingOpener(host: node.host, port: node.port),
                    setSnapshot: setSnapshot,
                    shards: Dictionary(grouping: held, by: \.table).mapValues { $0.map(\.shard) }))
        }
        let lockTimeout = try connection.query("SELECT current_setting('lock_timeout')")[0].decode(String.self, at: 0)
        return .success(ShardPlan(nodes: nodes, lockTimeout: lockTimeout))
    }

    /// Why the shards cannot be read on their nodes: the read goes through the coordinator.
    struct Unavailable: Error {
        /// In a few words.
        var reason: String
    }

    /// A session on every node, in the read's snapshot there, holding ACCESS SHARE on its shards. Throws what a
    /// node answered when it refused the connection or the snapshot, or held a shard locked.
    func open() throws -> ShardSessions {
        var opened: [ShardSessions.Node] = []
        for node in nodes {
            do {
                let session = try node.open()
                try session.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
                try session.execute(node.setSnapshot)
                try session.execute("SELECT set_config('lock_timeout', \(lockTimeout), true)")
                let shards = node.shards.values.flatMap { $0 }.map {
                    "\(identifier: $0.schema).\(identifier: $0.name)" as Query
                }
                // Citus counts a LOCK of a shard as a change to it, refused unless this (read-only) transaction
                // says it means it; a Citus without the setting refuses nothing.
                try session.execute(
                    """
                    SELECT set_config('citus.enable_manual_changes_to_shards', 'on', true)
                    WHERE current_setting('citus.enable_manual_changes_to_shards', true) IS NOT NULL
                    """)
                try session.execute("LOCK TABLE \(shards.joined(separator: ", ")) IN ACCESS SHARE MODE NOWAIT")
                opened.append(ShardSessions.Node(session: session, shards: node.shards))
            } catch var error as StorageError {
                error.context = "opening a session on \(node.address) to read its shards"
                throw error
            }
        }
        return ShardSessions(nodes: opened)
    }

    /// A shard of a table read, on the node of one of its placements.
    private struct Placement {
        let table: TreeTable
        let shard: Shard
        let group: Int
        let host: String
        let port: Int
    }

    /// Where each shard of `tables` distributed by hash lies: one active placement a shard, the first by node
    /// group where Citus keeps several.
    private static func shardPlacements(of tables: [TreeTable], on connection: StoreConnection) throws -> [Placement] {
        let names = tables.map(\.name)
        // shard_name quotes and, outside public, qualifies; parse_ident undoes both.
        let rows = try connection.query(
            """
            SELECT DISTINCT ON (s.shardid) c.relname::text, ns.nspname::text,
                (parse_ident(shard_name(s.logicalrelid, s.shardid)))[
                    cardinality(parse_ident(shard_name(s.logicalrelid, s.shardid)))],
                p.groupid, n.nodename, n.nodeport
            FROM pg_dist_shard s
            JOIN pg_dist_partition d ON d.logicalrelid = s.logicalrelid AND d.partmethod = 'h'
            JOIN pg_dist_placement p ON p.shardid = s.shardid AND p.shardstate = 1
            JOIN pg_dist_node n ON n.groupid = p.groupid AND n.noderole = 'primary' AND n.isactive
            JOIN pg_class c ON c.oid = s.logicalrelid
            JOIN pg_namespace ns ON ns.oid = c.relnamespace
            WHERE s.logicalrelid = ANY (\(names)::regclass[])
            ORDER BY s.shardid, p.groupid
            """)
        return try rows.map { row in
            let name = try row.decode(String.self, at: 0)
            guard let table = TreeTable.allCases.first(where: { $0.name == name }) else {
                throw StorageError(.decoding, "Citus placed a shard of \(name), which is not a table of the tree")
            }
            return Placement(
                table: table,
                shard: Shard(schema: try row.decode(String.self, at: 1), name: try row.decode(String.self, at: 2)),
                group: try row.decode(Int.self, at: 3), host: try row.decode(String.self, at: 4),
                port: try row.decode(Int.self, at: 5))
        }
    }

    /// A query that Citus routes to one shard on a node: a key of `table`'s distribution column whose shard lies
    /// in the node's group.
    private struct Route {
        let table: TreeTable
        let column: String
        let key: String
    }

    /// The tables that lead the store's co-location groups: every node holding shards of the tree holds one of
    /// theirs, since a group's tables are placed alike.
    private static let routedTables: [TreeTable] = TreeTable.allCases.filter { table in
        if case .distributed(_, nil) = table.description.placement { true } else { false }
    }

    /// For each of `groups`, a key routing a query to one of its shards, found among small integers written as
    /// text: each falls on a shard by its hash, and a few hundred reach every shard of a few dozen.
    private static func snapshotRoutes(to groups: [Int], on connection: StoreConnection) throws -> [Int: Route] {
        let names = routedTables.map(\.name)
        // Not citus_tables, which measures every shard over connections of its own.
        let shardCount = try connection.query(
            """
            SELECT coalesce(max(n), 0) FROM (
                SELECT count(*) AS n FROM pg_dist_shard WHERE logicalrelid = ANY (\(names)::regclass[])
                GROUP BY logicalrelid
            ) AS counts
            """
        )[0].decode(Int.self, at: 0)
        let rows = try connection.query(
            """
            WITH candidates AS MATERIALIZED (
                SELECT t.name, t.position, k.i,
                    get_shard_id_for_distribution_column(t.name::regclass, k.i::text) AS shardid
                FROM unnest(\(names)::text[]) WITH ORDINALITY AS t(name, position)
                CROSS JOIN generate_series(0, \(max(256, 8 * shardCount))) AS k(i))
            SELECT DISTINCT ON (p.groupid) p.groupid, c.name, c.i::text
            FROM candidates c JOIN pg_dist_placement p ON p.shardid = c.shardid AND p.shardstate = 1
            WHERE p.groupid = ANY (\(groups))
            ORDER BY p.groupid, c.position, c.i
            """)
        var routes: [Int: Route] = [:]
        for row in rows {
            let name = try row.decode(String.self, at: 1)
            guard let table = routedTables.first(where: { $0.name == name }),
                case .distributed(let column, _) = table.description.placement
            else { continue }
            routes[try row.decode(Int.self, at: 0)] = Route(
                table: table, column: column, key: try row.decode(String.self, at: 2))
        }
        return routes
    }
}
