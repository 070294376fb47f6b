internal import PostgresClient

/// The secondary indexes a whole-tree import drops after its TRUNCATE and builds again once every row is in, as
/// pg_restore does: one sorted build per index costs the server less than an insertion per row, and the builds
/// run at the end, while the console has nothing left to parse, instead of slowing every COPY it waits on
/// (232 MB export, one server: median 9.6 s → 8.5 s; BENCHMARKS-LOG.md).
///
/// It is all in the import's transaction: a rollback, a crash or a killed console leaves the indexes as they were.
/// Unique indexes stay, and on one server primary keys but those of `Store.tablesFilledAfterReading` (this path
/// loads in one session, where a primary key built at the end was measured slower than one kept while the file
/// loads, which overlaps its upkeep with parsing; the twins of a parallel import, `SideTables`, build theirs
/// after). On Citus every primary key goes too: there the workers keep the indexes up row by row while the
/// coordinator routes the rows, with no parsing to overlap, and one build per shard afterwards took a third less
/// (BENCHMARKS-LOG.md, "Binary COPY"). Anything a `CREATE INDEX` or `ADD CONSTRAINT` from the catalog would not give
/// back whole stays: an index in another tablespace, with a comment, a statistics target, the CLUSTER mark, the
/// replica identity, or anything that depends on it. Only indexes this role owns are dropped.
final class DeferredIndexes {
    private let connection: StoreConnection
    /// Each index's table and name and the statement that builds it (`CREATE INDEX`, or `ADD CONSTRAINT` for a
    /// primary key) as the catalog wrote it, in the order they are built.
    private let indexes: [(table: String, name: String, definition: String)]
    /// Which of them were built.
    private var isBuilt: [Bool]
    /// The indexes built, each as `table/name`: sessions of a parallel import that built the same table's
    /// index each in its own schema report it once.
    private(set) var built: Set<String> = []

    /// Indexes to build on `connection`, each by the statement the catalog gave for it, in this order.
    init(connection: StoreConnection, indexes: [(table: String, name: String, definition: String)]) {
        self.connection = connection
        self.indexes = indexes
        isBuilt = indexes.map { _ in false }
    }

    /// How many indexes it builds in all.
    var count: Int { indexes.count }

    /// Counts the indexes of `tables` as built: another session of a parallel import built them on the tables
    /// this import takes over, and the builds left are numbered after them.
    func markBuilt(tables: Set<String>) {
        for (number, index) in indexes.enumerated() where tables.contains(index.table) { isBuilt[number] = true }
    }

    /// The indexes of `tables` not built yet, in the order they are built.
    func unbuilt(of tables: Set<String>) -> [(table: String, name: String, definition: String)] {
        indexes.indices.filter { !isBuilt[$0] && tables.contains(indexes[$0].table) }.map { indexes[$0] }
    }

    /// Builds the indexes still missing, telling `onStep` of each; nothing the second time. Run before any
    /// statement that finds rows by one of them (the DELETE of a repeated key's earlier rows finds unmapped values
    /// by `sort_key`).
    func build(onStep: (ImportStep) -> Void) throws {
        for (number, index) in indexes.enumerated() where !isBuilt[number] {
            onStep(.buildingIndex(name: index.name, number: isBuilt.count { $0 } + 1, count: indexes.count))
            // The text comes from the catalog (see `deferIndexes`), which quotes every name it holds.
            try connection.execute(script: index.definition)
            isBuilt[number] = true
            built.insert(index.table + "/" + index.name)
        }
    }
}

extension TreeImport {
    /// Tables whose rows a whole-tree import writes only after the file is read, with `INSERT … SELECT` (the
    /// likes it staged, the lookups derived from /posts and /chats): their primary keys are built after the rows
    /// too, since nothing overlaps with those inserts (1 GB export: the likes 5.9 s → 3.2–3.6 s and 1.6 s for the
    /// key).
    static let tablesFilledAfterReading = [TreeTable.postLikes.name] + TreeTable.lookupNames

    /// Drops the secondary indexes of the tree's tables and lookups, and the primary keys of
    /// `tablesFilledAfterReading` (on Citus, `isDistributed`, of every one of those tables), that can be built
    /// again exactly, and returns them to build. The tables must be empty and locked (a whole-tree import, after
    /// its TRUNCATE).
    func deferIndexes(isDistributed: Bool) throws -> DeferredIndexes {
        let keyTables = isDistributed ? TreeTable.names + TreeTable.lookupNames : Self.tablesFilledAfterReading
        // Each: its name, the statement that drops it and the one that builds it again, all from the catalog.
        let rows = try connection.query(
            """
            SELECT c.relname, format('DROP INDEX %I.%I', n.nspname, c.relname), pg_get_indexdef(i.indexrelid),
                (SELECT relname FROM pg_class WHERE oid = i.indrelid)::text
            FROM pg_index i
            JOIN pg_class c ON c.oid = i.indexrelid
            JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE i.indrelid = ANY(\(TreeTable.names + TreeTable.lookupNames)::regclass[])
                AND i.indisvalid AND i.indisready AND i.indislive
                AND NOT i.indisunique AND NOT i.indisclustered AND NOT i.indisreplident
                AND c.reltablespace = 0 AND pg_has_role(c.relowner, 'USAGE')
                AND obj_description(c.oid, 'pg_class') IS NULL
                AND NOT EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attstattarget >= 0)
                AND NOT EXISTS (
                    SELECT 1 FROM pg_depend d
                    WHERE (d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype NOT IN ('a', 'n'))
                        OR (d.refclassid = 'pg_class'::regclass AND d.refobjid = c.oid))
            UNION ALL
            SELECT c.relname, format('ALTER TABLE %I.%I DROP CONSTRAINT %I', n.nspname, t.relname, k.conname),
                format('ALTER TABLE %I.%I ADD CONSTRAINT %I %s', n.nspname, t.relname, k.conname,
                    pg_get_constraintdef(k.oid)), t.relname::text
            FROM pg_constraint k
            JOIN pg_class t ON t.oid = k.conrelid
            JOIN pg_namespace n ON n.oid = t.relnamespace
            JOIN pg_class c ON c.oid = k.conindid
            JOIN pg_index i ON i.indexrelid = k.conindid
            WHERE k.contype = 'p' AND k.conrelid = ANY(\(keyTables)::regclass[])
                AND i.indisvalid AND NOT i.indisclustered AND NOT i.indisreplident
                AND c.reltablespace = 0 AND pg_has_role(t.relowner, 'USAGE')
                AND obj_description(c.oid, 'pg_class') IS NULL AND obj_description(k.oid, 'pg_constraint') IS NULL
                AND NOT EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attstattarget >= 0)
                -- A foreign key that references the table depends on its key's index.
                AND NOT EXISTS (
                    SELECT 1 FROM pg_depend d WHERE d.refclassid = 'pg_class'::regclass AND d.refobjid = c.oid)
            ORDER BY 1
            """)
        var indexes: [(table: String, name: String, definition: String)] = []
        for row in rows {
            // The text comes from the catalog, which quotes every name it holds (format's %I, pg_get_indexdef,
            // pg_get_constraintdef).
            try connection.execute(script: try row.decode(String.self, at: 1))
            indexes.append(
                (
                    try row.decode(String.self, at: 3), try row.decode(String.self, at: 0),
                    try row.decode(String.self, at: 2)
                ))
        }
        return DeferredIndexes(connection: connection, indexes: indexes)
    }
}
