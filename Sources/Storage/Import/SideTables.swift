import Foundation
internal import PostgresClient

/// The tables a whole-tree import fills beside the store's own, so that readers keep reading the store as it was
/// while the file loads, and wait only for one short switch at the end.
///
/// In the import's transaction, each table of the tree and each lookup gets a twin in the schema `schema`: the same
/// columns, defaults, checks, storage, comments, options and (given at the switch) privileges, and the same indexes and
/// keys under the same names, built once the rows are in, primary keys too (unique constraints other than those first):
/// with a session per core the server has no idle time left for a key's upkeep row by row to hide in, and one sorted
/// build costs it less (1.1 GB: 21.1–22.9 s against 24.6–25.5 s). The import then runs with `schema` first in its
/// `search_path`, so every statement it makes writes the twins. The switch, once the twins are whole: the store's
/// tables are locked ACCESS EXCLUSIVE (a wait of at most `lockWait` at a time, so that readers queue behind it no
/// longer than that), moved into `replacedSchema`, the twins moved into their places, the views that read the tables
/// rebuilt from their own definitions (so that they read the twins), and the old tables dropped. Everything is in the
/// import's transaction: a rollback, a killed console or a stopped server leaves nothing behind, and a dry run never
/// switches.
///
/// Until the switch the import holds EXCLUSIVE on the store's tables: readers (ACCESS SHARE) go on, writers wait
/// for the import as they always did.
final class SideTables {
    /// The schema the import's own session makes its twins in; it exists only inside the import's transaction.
    static let schema = "admin_import"
    /// The schemas the other sessions of a parallel import make their twins in are this and a number; they are
    /// committed before the import is (then moved in or dropped), and marked with `helperComment` so that the
    /// next import knows a leftover of a crash.
    static let helperSchemaPrefix = "admin_import_"
    /// The comment on a parallel import's helper schema.
    static let helperComment =
        "admin import: tables loaded beside the store tables (a leftover is dropped by the next import)"
    /// The schema the store's tables are moved to at the switch, just before they are dropped.
    static let replacedSchema = "admin_import_replaced"
    /// The longest, in milliseconds, a switch's lock request waits at a time: readers that come meanwhile queue
    /// behind it.
    static let lockWaitMilliseconds = 100.0

    private let connection: StoreConnection
    /// The schema of these twins.
    let schemaName: String
    /// Each table's schema, name and object identifier, in `Store.treeTables + TreeTable.lookupNames` order.
    private let tables: [(schema: String, name: String, oid: Int)]
    /// The statements that make the twins, in order: tables, then the keys kept while loading, then the rest.
    private let statements: [(table: String, step: Int, name: String, statement: String)]
    /// On Citus, how each table is placed, in `tables` order, so that its twin is placed alike; empty on one server.
    private let placements: [Placement]
    /// The `search_path` before the import put `schema` first.
    private var searchPath = ""

    private init(
        connection: StoreConnection, schemaName: String, tables: [(schema: String, name: String, oid: Int)],
        statements: [(table: String, step: Int, name: String, statement: String)], placements: [Placement]
    ) {
        self.connection = connection
        self.schemaName = schemaName
        self.tables = tables
        self.statements = statements
        self.placements = placements
    }

    /// How Citus places a table of the store, which its twin copies: sharded by `column` into `shardCount` shards,
    /// beside the rows of an earlier table (`colocatedWith`, whose twin the twin goes beside), or copied to every
    /// node (`column` nil).
    struct Placement {
        var table: String
        var column: String?
        var colocatedWith: String?
        var shardCount: Int
    }

    /// The twins the store's tables can have, or why they cannot (then the import locks readers out instead, as
    /// it did before): something a twin would not carry across the switch (a trigger, a policy, a publication, a
    /// foreign key, a materialized view or a function over a table, a tablespace, an index the catalog cannot
    /// restate), or a role that does not own the tables and their views or may not create a schema.
    ///
    /// On Citus (`isDistributed`) the twins are distributed as the tables are, in the import's transaction, so that
    /// the switch moves tables and shards alike; a table Citus does not hold (or holds otherwise than sharded by
    /// hash or copied to every node) is an obstacle.
    static func plan(
        on connection: StoreConnection, schema: String = SideTables.schema, isDistributed: Bool = false
    ) throws -> Result<SideTables, Obstacle> {
        let tableNames = TreeTable.names + TreeTable.lookupNames
        if let row = try connection.query(Self.obstacleQuery(tableNames)).first {
            return .failure(Obstacle(reason: try row.decode(String.self, at: 0)))
        }
        var placements: [Placement] = []
        if isDistributed {
            switch try citusPlacements(of: tableNames, on: connection) {
            case .success(let placed): placements = placed
            case .failure(let obstacle): return .failure(obstacle)
            }
        }
        var tables: [(schema: String, name: String, oid: Int)] = []
        for row in try connection.query(
            """
            SELECT n.nspname, c.relname, c.oid::int8
            FROM unnest(\(tableNames)::regclass[]) WITH ORDINALITY AS t(oid, position)
            JOIN pg_class c ON c.oid = t.oid JOIN pg_namespace n ON n.oid = c.relnamespace
            ORDER BY t.position
            """)
        {
            tables.append(
                (
                    try row.decode(String.self, at: 0), try row.decode(String.self, at: 1),
                    try row.decode(Int.self, at: 2)
                ))
        }
        var statements: [(table: String, step: Int, name: String, statement: String)] = []
        for row in try connection.query(Self.statementsQuery(tableNames, schema: schema)) {
            let name = try row.decode(String.self, at: 2)
            guard let statement = try row.decode(String?.self, at: 3) else {
                return .failure(Obstacle(reason: "the catalog's definition of the index \(name) cannot be restated"))
            }
            statements.append((try row.decode(String.self, at: 0), try row.decode(Int.self, at: 1), name, statement))
        }
        return .success(
            SideTables(
                connection: connection, schemaName: schema, tables: tables, statements: statements,
                placements: placements))
    }

    /// How Citus places each of `names`, or the first table it does not place as a twin can copy.
    private static func citusPlacements(of names: [String], on connection: StoreConnection) throws -> Result<
        [Placement], Obstacle
    > {
        let rows = try connection.query(
            """
            SELECT t.name, p.partmethod::text, column_to_column_name(p.logicalrelid, p.partkey), p.colocationid,
                (SELECT count(*) FROM pg_dist_shard s WHERE s.logicalrelid = p.logicalrelid)
            FROM unnest(\(names)::text[]) WITH ORDINALITY AS t(name, position)
            LEFT JOIN pg_dist_partition p ON p.logicalrelid = to_regclass(t.name)
            ORDER BY t.position
            """)
        var placements: [Placement] = []
        var groups: [Int: String] = [:]
        for row in rows {
            let name = try row.decode(String.self, at: 0)
            switch try row.decode(String?.self, at: 1) {
            case "n"?:
                placements.append(Placement(table: name, column: nil, colocatedWith: nil, shardCount: 1))
            case "h"?:
                let group = try row.decode(Int.self, at: 3)
                placements.append(
                    Placement(
                        table: name, column: try row.decode(String.self, at: 2), colocatedWith: groups[group],
                        shardCount: try row.decode(Int.self, at: 4)))
                if groups[group] == nil { groups[group] = name }
            case let method:
                let how = method.map { "placed by Citus's method '\($0)'" } ?? "not distributed by Citus"
                return .failure(Obstacle(reason: "\(name): \(how), where the other tables are"))
            }
        }
        return .success(placements)
    }

    /// Why an import cannot fill twins of the store's tables.
    struct Obstacle: Error {
        /// In a few words, naming the table or object.
        var reason: String
    }

    /// Makes the twins (with every index when `keepsIndexes`); returns the indexes left to build once the rows are
    /// in. `redirectWrites` then sends the import's statements to them.
    ///
    /// On Citus this comes first in the transaction, the schema the switch moves the tables to included: Citus
    /// refuses a schema's commands in a transaction once a statement of it ran over a node's shards in parallel.
    func create(keepsIndexes: Bool) throws -> DeferredIndexes {
        try connection.execute("CREATE SCHEMA \(identifier: schemaName)")
        if !placements.isEmpty { try connection.execute("CREATE SCHEMA \(identifier: Self.replacedSchema)") }
        if schemaName != Self.schema {
            // A utility statement takes no parameters; both texts are this type's own (no quotes in the comment).
            try connection.execute(
                script: "COMMENT ON SCHEMA \(Query.quoted(identifier: schemaName)) IS '\(Self.helperComment)'")
        }
        var deferred: [(table: String, name: String, definition: String)] = []
        var isPlaced = placements.isEmpty
        for (table, step, name, statement) in statements {
            // On Citus the twins are distributed while empty, before their keys and indexes (which Citus then
            // makes on every shard).
            if step > 0, !isPlaced {
                try placeTwins()
                isPlaced = true
            }
            if step == 2, !keepsIndexes {
                deferred.append((table, name, statement))
            } else {
                // The text comes from the catalog, through format's %I and %L (see `statementsQuery`).
                try connection.execute(script: statement)
            }
        }
        if !isPlaced { try placeTwins() }
        return DeferredIndexes(connection: connection, indexes: deferred)
    }

    /// Puts `schema` first in the transaction's `search_path`, so that every statement the import makes from now
    /// on writes the twins.
    func redirectWrites() throws {
        searchPath = try connection.query("SELECT current_setting('search_path')")[0].decode(String.self, at: 0)
        try connection.execute(
            "SELECT set_config('search_path', format('%I, ', \(schemaName)::text) || \(searchPath), true)")
    }

    /// On Citus, places each twin as its table is placed (`placements`).
    private func placeTwins() throws {
        for placement in placements {
            try Distribution.place(
                twin(placement.table),
                placement.column.map { .distributed(column: $0, colocateWith: placement.colocatedWith.map(twin)) }
                    ?? .reference,
                shardCount: placement.shardCount, on: connection)
        }
    }

    /// The twin of `table`, as a qualified name `regclass` reads.
    private func twin(_ table: String) -> String {
        "\(Query.quoted(identifier: schemaName)).\(Query.quoted(identifier: table))"
    }

    // MARK: A parallel import's other sessions

    /// Makes `table`, as another session of a parallel import filled it in the schema `helper`, this import's
    /// twin: the empty twin made here goes, the helper's (with its indexes) takes its place.
    func adopt(_ table: String, from helper: String) throws {
        try connection.execute("DROP TABLE \(identifier: schemaName).\(identifier: table)")
        try connection.execute(
            "ALTER TABLE \(identifier: helper).\(identifier: table) SET SCHEMA \(identifier: schemaName)")
    }

    /// Adds the rows another session of a parallel import loaded into `table` in the schema `helper` to this
    /// import's twin (a table that several sessions' nodes wrote: unmapped values).
    func merge(_ table: String, from helper: String) throws {
        try connection.execute(
            """
            INSERT INTO \(identifier: schemaName).\(identifier: table)
            SELECT * FROM \(identifier: helper).\(identifier: table)
            """)
    }

    /// Drops the schema of another session of a parallel import, with whatever is left in it.
    static func dropHelper(_ helper: String, on connection: StoreConnection) throws {
        try connection.execute("DROP SCHEMA IF EXISTS \(identifier: helper) CASCADE")
    }

    /// Drops what parallel imports that never finished left behind (their helpers' schemas, marked by
    /// `helperComment`); returns their names. Run by a whole-tree import, or `vacuum`, holding the maintenance
    /// lock, so that no import is running.
    static func dropLeftovers(on connection: StoreConnection) throws -> [String] {
        let names = try leftovers(on: connection).map(\.name)
        for name in names { try dropHelper(name, on: connection) }
        return names
    }

    /// The helpers' schemas that exist (committed), with the bytes their tables take: a running parallel
    /// import's, or what one that never finished left behind.
    static func leftovers(on connection: StoreConnection) throws -> [ImportLeftover] {
        let rows = try connection.query(
            """
            SELECT n.nspname, coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint
            FROM pg_namespace n LEFT JOIN pg_class c ON c.relnamespace = n.oid AND c.relkind = 'r'
            WHERE starts_with(n.nspname, \(helperSchemaPrefix))
                AND obj_description(n.oid, 'pg_namespace') = \(helperComment)
            GROUP BY n.nspname ORDER BY 1
            """)
        return try rows.map {
            ImportLeftover(name: try $0.decode(String.self, at: 0), bytes: try $0.decode(Int.self, at: 1))
        }
    }

    /// Puts the twins in the store tables' places and drops the tables they replace; returns the sessions whose
    /// statement it cancelled. Readers wait from the moment the lock is granted to the import's commit, which
    /// follows: a few statements. `isCancelled` is asked between lock attempts.
    func switchIn(isCancelled: () -> Bool) throws -> [Int] {
        try connection.execute("SELECT set_config('search_path', \(searchPath), true)")
        try matchPrivileges()
        // The views it rebuilds that read only the store are locked with the tables: a reader of a view holds it
        // while it waits for the tables, and would deadlock with a rebuild that came after the tables' lock.
        let viewNames = try connection.query(Self.viewNamesQuery(tables.map(\.oid))).map {
            "\(identifier: try $0.decode(String.self, at: 0)).\(identifier: try $0.decode(String.self, at: 1))" as Query
        }
        let cancelled = try lockTables(and: viewNames, isCancelled: isCancelled)
        // Read before anything moves: each definition names the tables as the views' readers do.
        let views = try connection.query(Self.viewsQuery(tables.map(\.oid))).map { try $0.decode(String.self, at: 0) }
        if placements.isEmpty { try connection.execute("CREATE SCHEMA \(identifier: Self.replacedSchema)") }
        for table in tables {
            try connection.execute(
                "ALTER TABLE \(identifier: table.schema).\(identifier: table.name) SET SCHEMA \(identifier: Self.replacedSchema)"
            )
            try connection.execute(
                "ALTER TABLE \(identifier: Self.schema).\(identifier: table.name) SET SCHEMA \(identifier: table.schema)"
            )
        }
        // The text comes from the catalog (pg_get_viewdef, format's %I and %L).
        for view in views { try connection.execute(script: view) }
        // RESTRICT: anything that still reads an old table fails the import rather than going with it.
        let replaced = tables.map { "\(identifier: Self.replacedSchema).\(identifier: $0.name)" as Query }
            .joined(separator: ", ")
        try connection.execute("DROP TABLE \(replaced)")
        try connection.execute("DROP SCHEMA \(identifier: Self.replacedSchema), \(identifier: Self.schema)")
        return cancelled
    }

    /// Gives the twins exactly the privileges of the tables they replace: what a table grants that its twin lacks,
    /// and revokes what the twin has beyond it. Made by the importing role, a twin has what its default
    /// privileges (`ALTER DEFAULT PRIVILEGES`) give every new table and its owner every privilege: a grant the
    /// operator revoked from a table (or from its owner) would otherwise come back with the switch. Revokes come
    /// first, so that a privilege whose grant option differs ends as the table has it.
    private func matchPrivileges() throws {
        let statements = try connection.query(
            """
            WITH pairs AS (
                SELECT o.relname, coalesce(o.relacl, acldefault('r', o.relowner)) AS original,
                    coalesce(t.relacl, acldefault('r', t.relowner)) AS twin
                FROM unnest(\(tables.map(\.oid))::oid[]) AS r(oid)
                JOIN pg_class o ON o.oid = r.oid
                JOIN pg_class t ON t.relname = o.relname AND t.relnamespace = \(Self.schema)::regnamespace
            ), granted AS (
                SELECT p.relname, a.grantee, a.privilege_type, a.is_grantable FROM pairs p, aclexplode(p.original) a
            ), held AS (
                SELECT p.relname, a.grantee, a.privilege_type, a.is_grantable FROM pairs p, aclexplode(p.twin) a
            ), extra AS (
                SELECT * FROM held EXCEPT SELECT * FROM granted
            ), missing AS (
                SELECT * FROM granted EXCEPT SELECT * FROM held
            )
            SELECT 0, format('REVOKE %s%s ON %I.%I FROM %s',
                CASE WHEN g.grantee IS NULL THEN '' ELSE 'GRANT OPTION FOR ' END, e.privilege_type,
                \(Self.schema)::text, e.relname,
                CASE e.grantee WHEN 0 THEN 'PUBLIC' ELSE quote_ident(pg_get_userbyid(e.grantee)) END)
            FROM extra e LEFT JOIN granted g
                ON g.relname = e.relname AND g.grantee = e.grantee AND g.privilege_type = e.privilege_type
            UNION ALL
            SELECT 1, format('GRANT %s ON %I.%I TO %s%s', m.privilege_type, \(Self.schema)::text, m.relname,
                CASE m.grantee WHEN 0 THEN 'PUBLIC' ELSE quote_ident(pg_get_userbyid(m.grantee)) END,
                CASE WHEN m.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END)
            FROM missing m
            ORDER BY 1, 2
            """
        ).map { try $0.decode(String.self, at: 1) }
        // The text comes from the catalog, through format's %I.
        for statement in statements { try connection.execute(script: statement) }
    }

    /// Takes ACCESS EXCLUSIVE on the store's tables and on `views`, asking for it `lockWaitMilliseconds` at a
    /// time so that readers never queue behind the request for longer. A transaction that read the tables before
    /// the import and now waits for it to write would wait forever (each waits for the other): its statement is
    /// cancelled first, as PostgreSQL's deadlock detector cancels one of two such sessions (it would pick the
    /// import, whose request comes last). Returns the sessions cancelled.
    private func lockTables(and views: [Query], isCancelled: () -> Bool) throws -> [Int] {
        // Views first: a reader holding one while it waits for the tables then keeps the request waiting on it
        // alone, not on the tables too.
        let list = (views + tables.map { "\(identifier: $0.schema).\(identifier: $0.name)" as Query })
            .joined(separator: ", ")
        var cancelled: [Int] = []
        while true {
            cancelled += try cancelWaitingReaders()
            do {
                try connection.withTransaction {
                    try connection.execute(
                        "SELECT set_config('lock_timeout', \(StoreConnection.lockTimeoutSetting(milliseconds: Self.lockWaitMilliseconds)), true)"
                    )
                    // On Citus the lock is the coordinator's alone: there `lock_timeout` paces the request (on the
                    // workers, where Citus would take it first, it waits as long as a reader holds the tables, and
                    // readers queue behind it). The changes that follow take the workers' locks, once no reader holds
                    // the coordinator's.
                    let propagation =
                        try placements.isEmpty
                        ? nil
                        : connection.query("SELECT current_setting('citus.enable_ddl_propagation')")[0].decode(
                            String.self, at: 0)
                    if propagation != nil { try connection.execute(ClusterSnapshot.coordinatorOnly) }
                    try connection.execute("LOCK TABLE \(list) IN ACCESS EXCLUSIVE MODE")
                    if let propagation {
                        try connection.execute(
                            "SELECT set_config('citus.enable_ddl_propagation', \(propagation), true)")
                    }
                }
                break
            } catch let error as StorageError where error.isLockRefusal || error.sqlState == .deadlockDetected {
                // A deadlock is found at once when the request would wait for a session that waits for this one
                // (one that began waiting after the cancels above): cancelled on the next round.
                if isCancelled() {
                    throw StorageError.cancelledByUser
                }
                Thread.sleep(forTimeInterval: 0.05)
            }
        }
        try connection.execute("SELECT set_config('lock_timeout', '0', true)")
        return cancelled
    }

    /// Cancels the statement of each session that holds a lock on one of the store's tables while it waits for
    /// this one: it read before the import and now wants to write, so neither could go on.
    private func cancelWaitingReaders() throws -> [Int] {
        let rows = try connection.query(
            """
            SELECT a.pid, pg_cancel_backend(a.pid)
            FROM pg_stat_activity a
            WHERE pg_backend_pid() = ANY (pg_blocking_pids(a.pid))
                AND EXISTS (
                    SELECT 1 FROM pg_locks l
                    WHERE l.pid = a.pid AND l.granted AND l.locktype = 'relation'
                        AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
                        AND l.relation = ANY (\(tables.map(\.oid))::oid[]))
            """)
        return try rows.compactMap { row in try row.decode(Bool.self, at: 1) ? try row.decode(Int.self, at: 0) : nil }
    }

    // MARK: The catalog

    /// The first reason (in words) the tables `names` cannot have twins; no row when they can.
    private static func obstacleQuery(_ names: [String]) -> Query {
        """
        WITH t AS (
            SELECT c.oid, c.relname, c.reltype, c.relkind, c.relowner, c.reltablespace, c.relrowsecurity,
                c.relreplident, c.relhassubclass, c.relispartition, c.reltoastrelid, c.relacl
            FROM unnest(\(names)::regclass[]) AS r(oid) JOIN pg_class c ON c.oid = r.oid
        )
        SELECT reason FROM (
            SELECT 'a schema named ' || nspname || ' exists' FROM pg_namespace
            WHERE nspname IN (\(schema), \(replacedSchema))
            UNION ALL
            SELECT 'this role may not create a schema in the database'
            WHERE NOT has_database_privilege(current_database(), 'CREATE')
            UNION ALL
            SELECT t.relname || ': ' || reason FROM t, LATERAL (VALUES
                (CASE WHEN t.relkind <> 'r' THEN 'not a plain table' END),
                (CASE WHEN NOT pg_has_role(t.relowner, 'USAGE') THEN 'this role does not own it' END),
                (CASE WHEN t.reltablespace <> 0 THEN 'it has a tablespace of its own' END),
                (CASE WHEN t.relrowsecurity THEN 'it has row-level security' END),
                (CASE WHEN t.relreplident <> 'd' THEN 'it has a replica identity of its own' END),
                (CASE WHEN t.relhassubclass OR t.relispartition
                    OR EXISTS (SELECT 1 FROM pg_inherits WHERE inhrelid = t.oid) THEN 'it inherits or is inherited' END),
                (CASE WHEN EXISTS (SELECT 1 FROM pg_trigger g WHERE g.tgrelid = t.oid AND NOT g.tgisinternal)
                    THEN 'it has a trigger' END),
                (CASE WHEN EXISTS (SELECT 1 FROM pg_policy p WHERE p.polrelid = t.oid) THEN 'it has a policy' END),
                (CASE WHEN EXISTS (SELECT 1 FROM pg_publication_rel p WHERE p.prrelid = t.oid)
                    OR EXISTS (SELECT 1 FROM pg_publication p WHERE p.puballtables) THEN 'it is published' END),
                (CASE WHEN EXISTS (
                    SELECT 1 FROM pg_constraint k WHERE k.contype = 'f' AND t.oid IN (k.conrelid, k.confrelid))
                    THEN 'it has a foreign key' END),
                (CASE WHEN EXISTS (SELECT 1 FROM pg_statistic_ext s WHERE s.stxrelid = t.oid)
                    THEN 'it has extended statistics' END),
                (CASE WHEN EXISTS (
                    SELECT 1 FROM pg_attribute a
                    WHERE a.attrelid = t.oid AND a.attnum > 0 AND NOT a.attisdropped
                        AND (a.attacl IS NOT NULL OR a.attstattarget >= 0 OR a.attidentity::text <> ''))
                    THEN 'a column has privileges, a statistics target or an identity of its own' END),
                (CASE WHEN EXISTS (SELECT 1 FROM aclexplode(t.relacl) a WHERE a.grantor <> t.relowner)
                    THEN 'a privilege on it was granted by another role than its owner' END),
                (CASE WHEN EXISTS (SELECT 1 FROM pg_seclabel l WHERE l.objoid = t.oid AND l.classoid = 'pg_class'::regclass)
                    THEN 'it has a security label' END),
                (CASE WHEN EXISTS (SELECT 1 FROM pg_class x WHERE x.oid = t.reltoastrelid AND x.reloptions IS NOT NULL)
                    THEN 'its TOAST table has options' END),
                (CASE WHEN EXISTS (SELECT 1 FROM pg_rewrite r WHERE r.ev_class = t.oid) THEN 'it has a rule' END),
                (CASE WHEN EXISTS (
                    SELECT 1 FROM pg_index i JOIN pg_class x ON x.oid = i.indexrelid
                    WHERE i.indrelid = t.oid AND (NOT i.indisvalid OR NOT i.indisready OR NOT i.indislive
                        OR i.indisclustered OR i.indisreplident OR x.reltablespace <> 0))
                    THEN 'an index is invalid, marked for CLUSTER or in a tablespace of its own' END),
                ((SELECT 'the ' || CASE WHEN x.relkind = 'v' THEN 'view ' ELSE 'relation ' END || x.oid::regclass::text
                        || ' reads it' || CASE WHEN x.relkind = 'v' THEN ' and this role does not own it' ELSE '' END
                    FROM pg_depend d
                    JOIN pg_rewrite r ON r.oid = d.objid JOIN pg_class x ON x.oid = r.ev_class
                    WHERE d.classid = 'pg_rewrite'::regclass AND d.refclassid = 'pg_class'::regclass
                        AND d.refobjid = t.oid AND r.ev_class <> t.oid
                        AND (x.relkind <> 'v' OR r.rulename <> '_RETURN' OR NOT pg_has_role(x.relowner, 'USAGE'))
                    LIMIT 1)),
                ((SELECT pg_describe_object(d.classid, d.objid, d.objsubid) || ' depends on it'
                    FROM pg_depend d
                    WHERE ((d.refclassid = 'pg_class'::regclass AND d.refobjid = t.oid)
                            OR (d.refclassid = 'pg_type'::regclass AND d.refobjid = t.reltype))
                        AND d.classid NOT IN ('pg_rewrite'::regclass, 'pg_constraint'::regclass, 'pg_attrdef'::regclass)
                        AND NOT (d.classid = 'pg_class'::regclass
                            AND d.objid IN (SELECT indexrelid FROM pg_index WHERE indrelid = t.oid))
                        AND NOT (d.classid = 'pg_class'::regclass AND d.objid = t.reltoastrelid)
                        -- Citus's truncate trigger: a twin distributed gets its own.
                        AND NOT (d.classid = 'pg_trigger'::regclass
                            AND d.objid IN (SELECT oid FROM pg_trigger WHERE tgrelid = t.oid AND tgisinternal))
                        AND NOT (d.classid = 'pg_type'::regclass
                            AND d.objid IN (t.reltype, (SELECT typarray FROM pg_type WHERE oid = t.reltype)))
                    LIMIT 1))
            ) AS v(reason)
            WHERE reason IS NOT NULL
        ) AS reasons(reason)
        LIMIT 1
        """
    }

    /// For each of the tables `names`: the step (0 the table and its comment; 1 unique constraints but primary
    /// keys, kept while loading; 2 the indexes and keys built after, by name), the object's name and the statements
    /// that make its twin in `schema` (an index's with its comment and statistics targets). An index whose catalog
    /// definition does not begin as expected has a NULL statement.
    private static func statementsQuery(_ names: [String], schema: String) -> Query {
        """
        WITH t AS (
            SELECT c.oid, c.relname, n.nspname, c.relpersistence, c.reloptions, c.relacl, c.relowner, r.position
            FROM unnest(\(names)::regclass[]) WITH ORDINALITY AS r(oid, position)
            JOIN pg_class c ON c.oid = r.oid JOIN pg_namespace n ON n.oid = c.relnamespace
        )
        SELECT t.relname::text, q.step, q.name, q.statement FROM t, LATERAL (
            SELECT 0, 0, t.relname::text,
                format('CREATE %sTABLE %I.%I (LIKE %I.%I INCLUDING DEFAULTS INCLUDING CONSTRAINTS '
                    'INCLUDING GENERATED INCLUDING STORAGE INCLUDING COMPRESSION INCLUDING COMMENTS)',
                    CASE t.relpersistence WHEN 'u' THEN 'UNLOGGED ' ELSE '' END, \(schema)::text, t.relname,
                    t.nspname, t.relname) || \(Self.optionsClause)
            UNION ALL
            SELECT 0, 1, t.relname::text, format('COMMENT ON TABLE %I.%I IS %L', \(schema)::text, t.relname,
                obj_description(t.oid, 'pg_class'))
            WHERE obj_description(t.oid, 'pg_class') IS NOT NULL
            UNION ALL
            SELECT CASE WHEN (k.oid IS NOT NULL AND k.contype <> 'p')
                    OR (k.oid IS NULL AND i.indisunique) THEN 1 ELSE 2 END,
                3, x.relname::text,
                CASE WHEN k.oid IS NOT NULL THEN
                    format('ALTER TABLE %I.%I ADD CONSTRAINT %I %s', \(schema)::text, t.relname, k.conname,
                        pg_get_constraintdef(k.oid))
                WHEN starts_with(pg_get_indexdef(i.indexrelid), format('CREATE %sINDEX %I ON %I.%I USING ',
                    CASE WHEN i.indisunique THEN 'UNIQUE ' ELSE '' END, x.relname, t.nspname, t.relname)) THEN
                    format('CREATE %sINDEX %I ON %I.%I USING ', CASE WHEN i.indisunique THEN 'UNIQUE ' ELSE '' END,
                        x.relname, \(schema)::text, t.relname)
                    || substr(pg_get_indexdef(i.indexrelid), length(format('CREATE %sINDEX %I ON %I.%I USING ',
                        CASE WHEN i.indisunique THEN 'UNIQUE ' ELSE '' END, x.relname, t.nspname, t.relname)) + 1)
                END
                || CASE WHEN obj_description(x.oid, 'pg_class') IS NULL THEN '' ELSE
                    format('; COMMENT ON INDEX %I.%I IS %L', \(schema)::text, x.relname,
                        obj_description(x.oid, 'pg_class')) END
                || coalesce((SELECT string_agg(format('; ALTER INDEX %I.%I ALTER COLUMN %s SET STATISTICS %s',
                    \(schema)::text, x.relname, a.attnum, a.attstattarget), '' ORDER BY a.attnum)
                    FROM pg_attribute a WHERE a.attrelid = x.oid AND a.attstattarget >= 0), '')
            FROM pg_index i JOIN pg_class x ON x.oid = i.indexrelid
            LEFT JOIN pg_constraint k
                ON k.conindid = i.indexrelid AND k.conrelid = t.oid AND k.contype IN ('p', 'u', 'x')
            WHERE i.indrelid = t.oid
        ) AS q(step, part, name, statement)
        ORDER BY q.step, CASE WHEN q.step < 2 THEN t.position END, q.part, q.name
        """
    }

    /// ` WITH (name = 'value', …)` restating the `reloptions` of the relation the query reads (a table's, a
    /// view's), or '' when it has none.
    private static let optionsClause: Query = """
        coalesce((SELECT ' WITH (' || string_agg(format('%s = %L', split_part(o, '=', 1),
            substr(o, strpos(o, '=') + 1)), ', ') || ')' FROM unnest(reloptions) AS o), '')
        """

    /// `CREATE OR REPLACE VIEW` of every view that reads one of `tables` (object identifiers), as the catalog defines it
    /// now (options included), oldest first.
    private static func viewsQuery(_ tables: [Int]) -> Query {
        """
        SELECT format('CREATE OR REPLACE VIEW %I.%I%s AS %s', n.nspname, x.relname,
            \(Self.optionsClause),
            pg_get_viewdef(x.oid))
        FROM pg_class x JOIN pg_namespace n ON n.oid = x.relnamespace
        WHERE \(Self.readsOneOf(tables))
        ORDER BY x.oid
        """
    }

    /// The schema and name of every view that `viewsQuery` finds and that reads nothing but `tables` (object
    /// identifiers): locking a view locks what it reads too, and a view that also reads a table of the app's own
    /// would hold that table against its writers for the switch, and keep the switch waiting on its readers.
    private static func viewNamesQuery(_ tables: [Int]) -> Query {
        """
        SELECT n.nspname::text, x.relname::text
        FROM pg_class x JOIN pg_namespace n ON n.oid = x.relnamespace
        WHERE \(Self.readsOneOf(tables))
            AND (SELECT array_agg(d.refobjid) FROM pg_depend d JOIN pg_rewrite r ON r.oid = d.objid
                WHERE r.ev_class = x.oid AND d.classid = 'pg_rewrite'::regclass
                    AND d.refclassid = 'pg_class'::regclass AND d.refobjid <> x.oid) <@ \(tables)::oid[]
        ORDER BY x.oid
        """
    }

    /// The condition that the view `x` (a pg_class row) reads one of `tables` (object identifiers).
    private static func readsOneOf(_ tables: [Int]) -> Query {
        """
        x.relkind = 'v' AND x.oid IN (
            SELECT r.ev_class FROM pg_depend d JOIN pg_rewrite r ON r.oid = d.objid
            WHERE d.classid = 'pg_rewrite'::regclass AND d.refclassid = 'pg_class'::regclass
                AND d.refobjid = ANY (\(tables)::oid[]))
        """
    }
}
