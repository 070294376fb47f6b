import PostgresTestSupport
import Testing
@testable import Storage

/// The schema stays Citus-shaped (shared/distributed-postgres.md), checked on plain PostgreSQL.
@Suite("Schema rules")
struct SchemaTests {
    /// Each tree table's distribution column under the co-location plan.
    static let distributionColumns = [
        "users": "uid", "posts": "owner_uid", "feed_posts": "post_id", "post_likes": "post_key",
        "followers": "uid", "following": "uid", "timeline": "uid", "chats": "uid", "messages": "chat_key",
        "unmapped_values": "root",
    ]

    @Test func everyTreeTableIsPlannedAndHasAPrimaryKeyLedByItsDistributionColumn() throws {
        let connection = try TestPostgres.makeDatabase().connect()
        #expect(Set(Store.treeTables) == Set(Self.distributionColumns.keys))
        let rows = try connection.query("""
            SELECT c.relname::text, a.attname::text, a.attnotnull
            FROM pg_index i
            JOIN pg_class c ON c.oid = i.indrelid
            JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = 'public'
            JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = i.indkey[0]
            WHERE i.indisprimary
            """)
        var leading: [String: String] = [:]
        for row in rows {
            leading[try row.decode(String.self, at: 0)] = try row.decode(String.self, at: 1)
            #expect(try row.decode(Bool.self, at: 2), "distribution columns are NOT NULL")
        }
        for (table, column) in Self.distributionColumns {
            #expect(leading[table] == column, "\(table)'s primary key must lead with \(column)")
        }
    }

    @Test func uniqueIndexesIncludeTheDistributionColumn() throws {
        let connection = try TestPostgres.makeDatabase().connect()
        let rows = try connection.query("""
            SELECT c.relname::text, array_agg(a.attname::text)
            FROM pg_index i
            JOIN pg_class c ON c.oid = i.indrelid
            JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = 'public'
            JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = ANY (i.indkey)
            WHERE i.indisunique AND c.relname <> 'schema_migrations'
            GROUP BY i.indexrelid, c.relname
            """)
        for row in rows {
            let table = try row.decode(String.self, at: 0)
            let columns = try row.decode([String].self, at: 1)
            let distribution = try #require(Self.distributionColumns[table], "unplanned table \(table)")
            #expect(columns.contains(distribution), "a unique index on \(table) lacks \(distribution)")
        }
    }

    @Test func noTriggersRulesForeignKeysOrSequences() throws {
        let connection = try TestPostgres.makeDatabase().connect()
        let counts = try connection.query("""
            SELECT
              (SELECT count(*) FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
                 JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND NOT t.tgisinternal),
              (SELECT count(*) FROM pg_rules WHERE schemaname = 'public'),
              (SELECT count(*) FROM pg_constraint k JOIN pg_namespace n ON n.oid = k.connamespace
                 WHERE n.nspname = 'public' AND k.contype = 'f'),
              (SELECT count(*) FROM pg_sequences WHERE schemaname = 'public' AND data_type <> 'bigint'::regtype)
            """)[0]
        #expect(try counts.decode(Int.self, at: 0) == 0, "triggers")
        #expect(try counts.decode(Int.self, at: 1) == 0, "rules")
        #expect(try counts.decode(Int.self, at: 2) == 0, "foreign keys across co-location groups")
        #expect(try counts.decode(Int.self, at: 3) == 0, "non-bigint sequences")
    }

    @Test func keyColumnsAreTextInByteOrder() throws {
        let connection = try TestPostgres.makeDatabase().connect()
        let rows = try connection.query("""
            SELECT c.relname::text, a.attname::text, format_type(a.atttypid, a.atttypmod), coalesce(co.collname::text, '')
            FROM pg_index i
            JOIN pg_class c ON c.oid = i.indrelid
            JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = 'public'
            JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = ANY (i.indkey)
            LEFT JOIN pg_collation co ON co.oid = a.attcollation
            WHERE i.indisprimary AND c.relname <> 'schema_migrations'
            """)
        #expect(rows.count > 10)
        for row in rows {
            let place = "\(try row.decode(String.self, at: 0)).\(try row.decode(String.self, at: 1))"
            #expect(try row.decode(String.self, at: 2).hasPrefix("text"), "\(place) must be text")
            #expect(try row.decode(String.self, at: 3) == "C", "\(place) must be COLLATE \"C\"")
        }
    }

    /// Only keys that may be integers (or are not ASCII) make an export sort a table; digit-led uids, which real
    /// Firebase Auth ids often are, leave it in index order.
    @Test func onlyPossibleIntegersAndNonASCIIKeysAreTakenAsReordering() throws {
        let connection = try TestPostgres.makeDatabase().connect()
        for (key, mayReorder) in [
            ("7", true), ("-12", true), ("007", true), ("99999999999", true), ("1-2", true), ("ñandú", true),
            ("日本", true), ("0Ukcg3IZ0t7TTqAVm8YRhXOxAlVC", false), ("-KmT0UpNzWDunZO_uttl", false),
            ("-0abc", false), ("alice", false), ("12a", false), ("", false),
        ] {
            let found = try connection.query("SELECT rtdb_key_may_reorder(\(key))")[0].decode(Bool.self, at: 0)
            #expect(found == mayReorder, "\(key)")
        }
        for (path, mayReorder) in [
            (["a", "7", "b"], true), (["a", "-3"], true), ([".priority"], true), (["a", "7b"], false),
            (["0Ukcg3IZ0t7TTqAVm8YRhXOxAlVC", "x"], false), (["x", "é"], true),
        ] {
            let found = try connection.query("SELECT rtdb_path_may_reorder(\(path)::text[])")[0].decode(Bool.self, at: 0)
            #expect(found == mayReorder, "\(path)")
        }
    }
}
