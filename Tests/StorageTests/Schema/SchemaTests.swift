import PostgresTestSupport
import Testing

@testable import Storage

/// The schema stays Citus-shaped (shared/distributed-postgres.md), checked on plain PostgreSQL.
@Suite("Schema rules")
struct SchemaTests {
    /// Each tree table's distribution column under the co-location plan.
    /// The console's bookkeeping: local tables on the coordinator, never distributed.
    static let localTables = ["schema_migrations", "check_runs", "mirror_progress"]

    static let distributionColumns = [
        "users": "uid", "posts": "owner_uid", "feed_posts": "post_id", "post_likes": "post_owner_uid",
        "followers": "uid", "following": "uid", "timeline": "uid", "chats": "uid", "messages": "chat_key",
        "unmapped_values": "root", "post_keys": "post_key",
        "chat_holders": "chat_key", "auth_accounts": "uid", "auth_providers": "uid",
    ]

    /// Tables whose key leads with the tree's order rather than the distribution column (migration 0015: likes
    /// are read and found by post key; Citus wants the column in the key, not first).
    static let keysLedByTreeOrder: Set<String> = ["post_likes"]

    @Test func everyTreeTableIsPlannedAndHasAPrimaryKeyLedByItsDistributionColumn() throws {
        let connection = try TestPostgres.makeDatabase().connect()
        #expect(
            Set(Store.treeTables + Store.lookupTables + Store.authTables.filter { !$0.contains(".") })
                == Set(Self.distributionColumns.keys))
        let rows = try connection.query(
            """
            SELECT c.relname::text, array_agg(a.attname::text ORDER BY k.position)
            FROM pg_index i
            JOIN pg_class c ON c.oid = i.indrelid
            JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = 'public'
            CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, position)
            JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = k.attnum
            WHERE i.indisprimary
            GROUP BY 1
            """)
        var keys: [String: [String]] = [:]
        for row in rows { keys[try row.decode(String.self, at: 0)] = try row.decode([String].self, at: 1) }
        for (table, column) in Self.distributionColumns {
            let key = keys[table] ?? []
            if Self.keysLedByTreeOrder.contains(table) {
                #expect(key.contains(column), "\(table)'s primary key must hold \(column)")
            } else {
                #expect(key.first == column, "\(table)'s primary key must lead with \(column)")
            }
        }
    }

    /// Import, export, repairs and `distribute` derive everything from `TreeTable.description`: it must say what
    /// the migrations made.
    @Test func tableDescriptionsMatchTheMigratedSchema() throws {
        let connection = try TestPostgres.makeDatabase().connect()
        func columns(of table: String) throws -> [String] {
            try connection.query(
                """
                SELECT attname::text FROM pg_attribute
                WHERE attrelid = \(table)::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum
                """
            ).map { try $0.decode(String.self, at: 0) }
        }
        func primaryKey(of table: String) throws -> [String] {
            try connection.query(
                """
                SELECT a.attname::text FROM pg_index i
                CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, position)
                JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
                WHERE i.indrelid = \(table)::regclass AND i.indisprimary ORDER BY k.position
                """
            ).map { try $0.decode(String.self, at: 0) }
        }
        for table in TreeTable.allCases {
            let described = table.description
            let existing = try columns(of: described.name)
            for column in table.columns {
                #expect(existing.contains(column), "\(described.name).\(column) is described but not migrated")
            }
            if table != .unmappedValues {
                let key = try primaryKey(of: described.name)
                #expect(Set(table.keyColumns).isSubset(of: key), "\(described.name)'s key is \(key)")
            }
            if case .distributed(let column, _) = described.placement {
                #expect(Self.distributionColumns[described.name] == column)
            }
            if let lookup = described.lookup {
                #expect(Set(try primaryKey(of: lookup.name)) == Set(table.keyColumns), "\(lookup.name)'s key")
            }
            if let batchKey = described.batchKey {
                #expect(existing.contains(batchKey))
            }
        }
        #expect(Store.distributionPlan.map(\.name) == Store.treeTables + Store.lookupTables + Store.authTables)
        for (index, planned) in Store.distributionPlan.enumerated() {
            guard case .distributed(_, let group?) = planned.placement else { continue }
            let leader = Store.distributionPlan.firstIndex { $0.name == group }
            #expect(leader.map { $0 < index } == true, "\(planned.name) is placed before \(group)")
        }
    }

    @Test func uniqueIndexesIncludeTheDistributionColumn() throws {
        let connection = try TestPostgres.makeDatabase().connect()
        let rows = try connection.query(
            """
            SELECT c.relname::text, array_agg(a.attname::text)
            FROM pg_index i
            JOIN pg_class c ON c.oid = i.indrelid
            JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = 'public'
            JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = ANY (i.indkey)
            WHERE i.indisunique AND c.relname <> ALL (\(Self.localTables))
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
        let counts = try connection.query(
            """
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
        let rows = try connection.query(
            """
            SELECT c.relname::text, a.attname::text, format_type(a.atttypid, a.atttypmod), coalesce(co.collname::text, '')
            FROM pg_index i
            JOIN pg_class c ON c.oid = i.indrelid
            JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = 'public'
            JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = ANY (i.indkey)
            LEFT JOIN pg_collation co ON co.oid = a.attcollation
            WHERE i.indisprimary AND c.relname <> ALL (\(Self.localTables))
            """)
        #expect(rows.count > 10)
        for row in rows {
            let place = "\(try row.decode(String.self, at: 0)).\(try row.decode(String.self, at: 1))"
            #expect(try row.decode(String.self, at: 2).hasPrefix("text"), "\(place) must be text")
            #expect(try row.decode(String.self, at: 3) == "C", "\(place) must be COLLATE \"C\"")
        }
    }

    /// The console computes `unmapped_values.sort_key` while importing and SQL computes it elsewhere: both must
    /// give the same bytes, and those bytes must sort as exports write keys.
    @Test func keyOrdersAgreeWithTheConsoleAndSortAsExportsDo() throws {
        let connection = try TestPostgres.makeDatabase().connect()
        var random = RandomTree(seed: 41)
        var keys = [
            "0", "-0", "00", "7", "07", "007", "-7", "-07", "-10", "-9", "9", "10", "2147483647", "2147483648",
            "-2147483648", "-2147483649", "0000000000000000000000007", "12345678901", "1a", "1-2", "-", "-K",
            "-KmT0UpNzWDunZO_uttl", "0Ukcg3IZ0t7TTqAVm8YRhXOxAlVC", ".priority", ".value", "é", "e\u{301}",
            "\u{E000}", "\u{FFFF}", "😀", "a😀b", "a\u{E000}b", "Москва", "a b", "1497918951912",
        ]
        for _ in 0..<300 { keys.append(random.key()) }
        let rows = try connection.query(
            "SELECT k, rtdb_key_order(k), rtdb_key_needs_order(k) FROM unnest(\(keys)) k")
        for row in rows {
            let key = try row.decode(String.self, at: 0)
            let order = try row.decode(String.self, at: 1)
            #expect(Array(order.utf8) == FirebaseKey.orderBytes(of: key), "\(key)")
            #expect(try row.decode(Bool.self, at: 2) == FirebaseKey.needsOrder(key), "\(key)")
        }
        let sorted = keys.sorted {
            FirebaseKey.orderBytes(of: $0).lexicographicallyPrecedes(FirebaseKey.orderBytes(of: $1))
        }
        for (a, b) in zip(sorted, sorted.dropFirst()) where FirebaseKey.compare(a, b) != 0 {
            #expect(FirebaseKey.exportPrecedes(a, b), "\(a) before \(b)")
        }
        for path in [["a"], ["a", "7", "b"], [".priority"], ["x", "-3", "😀", ".priority"], keys] {
            let sql = try connection.query("SELECT rtdb_path_order(\(path[0]), \(Array(path.dropFirst()))::text[])")[0]
                .decode(String.self, at: 0)
            #expect(Array(sql.utf8) == FirebaseKey.pathOrder(path), "\(path)")
        }
    }

    /// Only keys whose byte position can differ from their RTDB position are ordered by the partial indexes: the
    /// digit-led range and characters from U+E000 up. Other non-ASCII text keeps UTF-16 order in byte order.
    @Test func onlyDigitLedAndHighCharacterKeysNeedOrdering() throws {
        let connection = try TestPostgres.makeDatabase().connect()
        for (key, needsOrder) in [
            ("7", true), ("-12", true), ("007", true), ("99999999999", true), ("1-2", true), ("12a", true),
            ("0Ukcg3IZ0t7TTqAVm8YRhXOxAlVC", true), ("😀", true), ("\u{E000}", true), ("ñandú", false), ("日本", false),
            ("-KmT0UpNzWDunZO_uttl", false), ("-0abc", true), ("alice", false), ("", false), ("-", false),
        ] {
            let found = try connection.query("SELECT rtdb_key_needs_order(\(key))")[0].decode(Bool.self, at: 0)
            #expect(found == needsOrder, "\(key)")
            #expect(FirebaseKey.needsOrder(key) == needsOrder, "\(key)")
        }
    }
}
