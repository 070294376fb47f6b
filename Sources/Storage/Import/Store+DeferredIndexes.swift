import PostgresClient

/// The secondary indexes a whole-tree import drops after its TRUNCATE and builds again once every row is in, as
/// pg_restore does: one sorted build per index costs the server less than an insertion per row, and the builds
/// run at the end, while the console has nothing left to parse, instead of slowing every COPY it waits on
/// (232 MB export: 9.8–10.9 s → 8.4–8.7 s on one server, BENCHMARKS.md).
///
/// It is all in the import's transaction: a rollback, a crash or a killed console leaves the indexes as they were.
/// Primary keys and unique indexes stay (they are what makes a repeated row fail at once, and the build of a
/// primary key at the end was measured slower than keeping it, since the load overlaps it with parsing), and so
/// does anything a `CREATE INDEX` from `pg_get_indexdef` would not give back whole: an index in another
/// tablespace, with a comment, a statistics target, the CLUSTER mark, the replica identity, or anything that
/// depends on it. Only indexes this role owns are dropped.
final class DeferredIndexes {
    private let connection: StoreConnection
    /// Each index's name and `CREATE INDEX` statement as the catalog wrote it, in the order they are built.
    private let indexes: [(name: String, definition: String)]
    /// How many of them were built.
    private var built = 0

    fileprivate init(connection: StoreConnection, indexes: [(name: String, definition: String)]) {
        self.connection = connection
        self.indexes = indexes
    }

    /// Builds the indexes still missing, telling `onStep` of each; nothing the second time. Run before any
    /// statement that finds rows by one of them (the DELETE of a repeated key's earlier rows finds unmapped values
    /// by `sort_key`).
    func build(onStep: (ImportStep) -> Void) throws {
        while built < indexes.count {
            let index = indexes[built]
            onStep(.buildingIndex(name: index.name, number: built + 1, count: indexes.count))
            // The text comes from the catalog (`pg_get_indexdef`), which quotes every name it holds.
            try connection.execute(script: index.definition)
            built += 1
        }
    }
}

extension Store {
    /// Drops the secondary indexes of the tree's tables and lookups that can be built again exactly, and returns
    /// them to build; nil on a distributed store, whose indexes live on the workers' shards. The tables must be
    /// empty and locked (a whole-tree import, after its TRUNCATE).
    func deferIndexes() throws -> DeferredIndexes? {
        guard try !isDistributed() else { return nil }
        let rows = try connection.query(
            """
            SELECT n.nspname, c.relname, pg_get_indexdef(i.indexrelid)
            FROM pg_index i
            JOIN pg_class c ON c.oid = i.indexrelid
            JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE i.indrelid = ANY(\(Self.treeTables + Self.lookupTables)::regclass[])
                AND i.indisvalid AND i.indisready AND i.indislive
                AND NOT i.indisunique AND NOT i.indisclustered AND NOT i.indisreplident
                AND c.reltablespace = 0 AND pg_has_role(c.relowner, 'USAGE')
                AND obj_description(c.oid, 'pg_class') IS NULL
                AND NOT EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attstattarget >= 0)
                AND NOT EXISTS (
                    SELECT 1 FROM pg_depend d
                    WHERE (d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype NOT IN ('a', 'n'))
                        OR (d.refclassid = 'pg_class'::regclass AND d.refobjid = c.oid))
            ORDER BY c.relname
            """)
        var names: [Query] = []
        var indexes: [(name: String, definition: String)] = []
        for row in rows {
            let (schema, name) = (try row.decode(String.self, at: 0), try row.decode(String.self, at: 1))
            names.append("\(identifier: schema).\(identifier: name)")
            indexes.append((name, try row.decode(String.self, at: 2)))
        }
        if !names.isEmpty { try connection.execute("DROP INDEX \(names.joined(separator: ", "))") }
        return DeferredIndexes(connection: connection, indexes: indexes)
    }
}
