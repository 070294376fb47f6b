import FirebaseTree
import Foundation
import PostgresTestSupport
import Synchronization
import Testing
import TreeTestSupport

@testable import Storage

/// A whole-tree import fills tables beside the store's and switches them in at its end: readers read the store as
/// it was until then, the switch carries everything the operator added to the tables, and whatever it cannot
/// carry makes the import lock readers out as before, saying why.
@Suite("Whole-tree import beside its readers")
struct OnlineImportTests {
    /// The store each test starts from, and the file that replaces it.
    static let before = Result { try generate(GeneratorOptions(users: 12, seed: 21, plantsAnomalies: true)).json }
    static let after = Result { try generate(GeneratorOptions(users: 9, seed: 22, plantsAnomalies: true)).json }

    /// A database holding `before`, and its export.
    private func makeDatabase() throws -> (TestDatabase, String) {
        let database = try TestPostgres.makeDatabase()
        let store = Store(connection: try database.connect())
        try importJSON(try Self.before.get(), into: store)
        return (database, try exportJSON(store))
    }

    /// Runs a whole-tree import of `after` into `database`, gated at half its file (`importGated`).
    private func importing(
        into database: TestDatabase, options: ImportOptions = ImportOptions(),
        onStep: @escaping @Sendable (ImportStep) -> Void = { _ in },
        whileGated: () throws -> Void, whileFinishing: () throws -> Void = {}
    ) throws -> ImportReport {
        try importGated(
            try Self.after.get(), into: Store(connection: try database.connect()), options: options, onStep: onStep,
            whileGated: whileGated, whileFinishing: whileFinishing)
    }

    /// Whether anything of an import's side tables is left in `database`.
    private func leftovers(in database: TestDatabase) throws -> [String] {
        try Store(connection: try database.connect()).connection.query(
            """
            SELECT nspname FROM pg_namespace WHERE nspname IN (\(SideTables.schema), \(SideTables.replacedSchema))
            UNION ALL
            SELECT relname FROM pg_class WHERE relnamespace = 'public'::regnamespace AND relname LIKE 'admin\\_import%'
            """
        ).map { try $0.decode(String.self, at: 0) }
    }

    @Test func readersAnswerFromTheStoreAsItWasWhileTheFileLoads() throws {
        let (database, before) = try makeDatabase()
        let reader = Store(connection: try database.connect())
        try reader.setLockTimeout(.seconds(2))
        let report = try importing(into: database) {
            // Each of these would have waited for the whole import (and failed after the lock timeout).
            expectSameText(try exportJSON(reader), before)
            #expect(try reader.users(limit: 3).count == 3)
            #expect(try reader.status().tableRows.isEmpty == false)
            var bytes: [UInt8] = []
            _ = try reader.exportTree(at: ["users"], query: TreeQuery(order: .key, limitToLast: 2)) {
                bytes.append(contentsOf: $0)
            }
            #expect(!bytes.isEmpty)
            #expect(try leftovers(in: database) == [], "the side tables are the import's alone until it commits")
        }
        #expect(report.readersLockedOut == nil)
        #expect(report.finishing.contains { $0.target == ImportReport.Finishing.switch })
        expectSameText(try exportJSON(reader), try exported(try Self.after.get()))
        try expectCheckMatches(reader, importedAlone: try Self.after.get())
        #expect(try leftovers(in: database) == [])
    }

    /// `check` on `store` finds what it finds on a store that imported `json` alone.
    private func expectCheckMatches(_ store: Store, importedAlone json: String) throws {
        let alone = try makeStore()
        try importJSON(json, into: alone)
        func counts(_ store: Store) throws -> [String] {
            try store.check(examples: 3).map { "\($0.check.rawValue) \($0.violations) \($0.examples)" }
        }
        #expect(try counts(store) == counts(alone))
    }

    /// What the catalog says of the store's tables, their indexes, keys, columns and views, as text. Privileges
    /// as they take effect, in a fixed order: a table that never had a GRANT or REVOKE keeps NULL for its owner's
    /// defaults, which no statement can set again once a twin had a default privilege revoked.
    private func catalog(of database: TestDatabase) throws -> String {
        try Store(connection: try database.connect()).connection.query(
            """
            SELECT string_agg(line, E'\\n' ORDER BY line) FROM (
                SELECT format('%s %s acl=%s options=%s comment=%s', c.relname, c.relkind,
                    (SELECT array_agg(a::text ORDER BY a::text) FROM unnest(coalesce(c.relacl, acldefault('r', c.relowner))) a),
                    c.reloptions, obj_description(c.oid, 'pg_class'))
                FROM pg_class c WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'v', 'i', 'm')
                UNION ALL
                SELECT pg_get_indexdef(i.indexrelid) FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid
                WHERE c.relnamespace = 'public'::regnamespace
                UNION ALL
                SELECT format('%s %s on %s', k.conname, pg_get_constraintdef(k.oid), k.conrelid::regclass)
                FROM pg_constraint k WHERE k.connamespace = 'public'::regnamespace
                UNION ALL
                SELECT format('%s.%s %s notnull=%s default=%s comment=%s storage=%s', a.attrelid::regclass, a.attname,
                    format_type(a.atttypid, a.atttypmod), a.attnotnull, pg_get_expr(d.adbin, d.adrelid),
                    col_description(a.attrelid, a.attnum), a.attstorage)
                FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
                LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
                WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'v') AND a.attnum > 0
                    AND NOT a.attisdropped
                UNION ALL
                SELECT c.relname || ' ' || pg_get_viewdef(c.oid) FROM pg_class c
                WHERE c.relnamespace = 'public'::regnamespace AND c.relkind = 'v'
            ) AS lines(line)
            """
        )[0].decode(String.self, at: 0)
    }

    @Test func theSwitchKeepsWhatTheOperatorAddedToTheTables() throws {
        let (database, _) = try makeDatabase()
        let admin = Store(connection: try database.connect())
        let role = "online_import_reader_\(UInt32.random(in: 0...UInt32.max))"
        try admin.connection.execute(script: "CREATE ROLE \(role) NOLOGIN")
        defer {
            try? admin.connection.execute(script: "DROP OWNED BY \(role); DROP ROLE \(role)")
        }
        try admin.connection.execute(
            script: """
                GRANT SELECT ON users, posts TO \(role);
                GRANT INSERT ON posts TO \(role) WITH GRANT OPTION;
                GRANT SELECT ON timeline TO PUBLIC;
                GRANT UPDATE ON users TO \(role);
                ALTER DEFAULT PRIVILEGES GRANT SELECT, DELETE ON TABLES TO \(role);
                ALTER DEFAULT PRIVILEGES GRANT SELECT ON TABLES TO PUBLIC;
                ALTER DEFAULT PRIVILEGES GRANT INSERT ON TABLES TO \(role) WITH GRANT OPTION;
                REVOKE TRUNCATE ON chats FROM CURRENT_USER;
                COMMENT ON TABLE users IS 'the app''s users';
                COMMENT ON COLUMN posts.image_url IS 'where the image is';
                ALTER TABLE timeline SET (fillfactor = 80, autovacuum_vacuum_scale_factor = 0.05);
                ALTER TABLE users ADD CONSTRAINT "short names" CHECK (length(username) < 1000);
                CREATE INDEX "posts by ""image"" url" ON posts (image_url) WHERE image_url IS NOT NULL;
                CREATE UNIQUE INDEX messages_by_content ON messages (chat_key, message_key, content);
                CREATE VIEW operator_post_counts WITH (security_barrier) AS
                    SELECT owner_uid, count(*) AS posts FROM posts GROUP BY owner_uid;
                CREATE VIEW operator_total AS SELECT sum(posts) AS posts FROM operator_post_counts;
                """)
        // Twins get default privileges and their owner every privilege; the tables they replace did not.
        let catalogBefore = try catalog(of: database)
        func privileges() throws -> [Bool] {
            let row = try admin.connection.query(
                """
                SELECT has_table_privilege(\(role), 'messages', 'SELECT'),
                    has_table_privilege('public', 'messages', 'SELECT'), 0 < (SELECT count(*) FROM aclexplode((SELECT relacl FROM pg_class WHERE oid = 'chats'::regclass)) a WHERE a.privilege_type = 'TRUNCATE')
                """)[0]
            return try [0, 1, 2].map { try row.decode(Bool.self, at: $0) }
        }
        #expect(try privileges() == [false, false, false])
        let report = try importing(into: database) {}
        #expect(report.readersLockedOut == nil)
        expectSameText(try catalog(of: database), catalogBefore)
        #expect(try privileges() == [false, false, false], "a revoked or never given privilege came back")
        let total = try admin.connection.query("SELECT posts::int8 FROM operator_total")[0].decode(Int?.self, at: 0)
        let posts = try admin.connection.query("SELECT count(*)::int8 FROM posts")[0].decode(Int.self, at: 0)
        #expect(total == posts, "the operator's views read the imported tables")
        expectSameText(try exportJSON(admin), try exported(try Self.after.get()))
        #expect(try leftovers(in: database) == [])
    }

    /// Something a twin could not carry across the switch, the SQL that adds it and the reason the import gives.
    struct Obstacle: Sendable, CustomStringConvertible {
        var description: String
        var sql: String
        var reason: String
    }

    static let obstacles = [
        Obstacle(
            description: "a trigger",
            sql: """
                CREATE FUNCTION operator_audit() RETURNS trigger LANGUAGE plpgsql AS 'BEGIN RETURN NEW; END';
                CREATE TRIGGER audit BEFORE INSERT ON posts FOR EACH ROW EXECUTE FUNCTION operator_audit();
                """,
            reason: "posts: it has a trigger"),
        Obstacle(
            description: "a materialized view",
            sql: "CREATE MATERIALIZED VIEW operator_users AS SELECT uid FROM users",
            reason: "users: the relation operator_users reads it"),
        Obstacle(
            description: "row-level security",
            sql: "ALTER TABLE chats ENABLE ROW LEVEL SECURITY",
            reason: "chats: it has row-level security"),
        Obstacle(
            description: "a function over a table's rows",
            sql: "CREATE FUNCTION operator_title(chats) RETURNS text LANGUAGE sql BEGIN ATOMIC SELECT $1.title; END",
            reason: "chats: function operator_title(chats) depends on it"),
    ]

    @Test(arguments: obstacles)
    func whatTheSwitchCannotCarryLocksReadersOutInsteadSayingWhy(_ obstacle: Obstacle) throws {
        let (database, _) = try makeDatabase()
        let admin = Store(connection: try database.connect())
        try admin.connection.execute(script: obstacle.sql)
        let catalogBefore = try catalog(of: database)
        let report = try importJSON(try Self.after.get(), into: admin)
        #expect(report.readersLockedOut == obstacle.reason)
        #expect(!report.finishing.contains { $0.target == ImportReport.Finishing.switch })
        expectSameText(try catalog(of: database), catalogBefore)
        expectSameText(try exportJSON(admin), try exported(try Self.after.get()))
    }

    @Test func aFailedOrDryRunImportLeavesTheStoreAndNothingBeside() throws {
        let (database, before) = try makeDatabase()
        let store = Store(connection: try database.connect())
        try expectFailedAndDryRunImportsLeaveNothing(
            of: try Self.after.get(), into: store, before: before, leftovers: { try leftovers(in: database) })

        // Cancelled while it loads (Ctrl-C), past the first few thousand rows.
        let cancelled = Atomic<Bool>(false)
        let large = try generate(GeneratorOptions(users: 150, seed: 23)).json
        #expect(throws: StorageError.self) {
            try store.importTree(
                from: MemorySource(large),
                observer: ImportObserver(
                    onRows: { _ in cancelled.store(true, ordering: .relaxed) },
                    isCancelled: { cancelled.load(ordering: .relaxed) }))
        }
        expectSameText(try exportJSON(store), before)
        #expect(try leftovers(in: database) == [])
    }

    @Test func aTransactionThatReadBeforeTheImportAndThenWritesGivesWayAtTheSwitch() throws {
        // It holds a read lock the switch needs and waits for the import to write: one of the two must give way,
        // and it is the transaction's statement, as PostgreSQL's deadlock detector could have chosen.
        let (database, _) = try makeDatabase()
        let app = Store(connection: try database.connect())
        let appPID = try ReadSnapshotTests.backendPID(app)
        try app.connection.execute("BEGIN")
        _ = try app.connection.query("SELECT count(*) FROM users")
        nonisolated(unsafe) let writing = app
        let appOutcome = Mutex<(any Error)?>(nil)
        let appDone = DispatchSemaphore(value: 0)
        let report = try importing(into: database) {
            Thread {
                do {
                    try writing.connection.execute("INSERT INTO users (uid, username) VALUES ('late', 'late')")
                } catch {
                    appOutcome.withLock { $0 = error }
                }
                appDone.signal()
            }.start()
            let waits = try ReadSnapshotTests.waitUntil(appPID, on: database) { false }
            #expect(waits, "the app's write did not wait for the import")
        }
        #expect(appDone.wait(timeout: .now() + 60) == .success)
        let error = appOutcome.withLock { $0 } as? StorageError
        #expect(
            error?.sqlState == .queryCanceled || error?.sqlState == .deadlockDetected, "\(String(describing: error))")
        try app.connection.execute("ROLLBACK")
        if error?.sqlState == .queryCanceled {
            #expect(report.warnings.contains { $0.message.contains("session \(appPID)") }, "\(report.warnings)")
        }
        expectSameText(try exportJSON(app), try exported(try Self.after.get()))
    }

    /// A session that holds, from before the switch until after readers came, something the switch must lock.
    struct SwitchHolder: Sendable, CustomStringConvertible {
        var description: String
        /// The statements that take it, in a transaction they begin.
        var statements: [String]
    }

    static let switchHolders = [
        // A read that began before the switch and lasts: an export of a large store.
        SwitchHolder(
            description: "an earlier reader of the tables",
            statements: ["BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", "LOCK TABLE users IN ACCESS SHARE MODE"]),
        // A lock on a view alone, as a reader of the view holds while it waits for the tables.
        SwitchHolder(
            description: "a session holding a view the switch rebuilds",
            statements: ["BEGIN", "COMMENT ON VIEW integrity_like_count IS 'being read'"]),
    ]

    @Test(arguments: switchHolders)
    func readersThatComeWhileTheSwitchWaitsGetThrough(_ holding: SwitchHolder) throws {
        let (database, before) = try makeDatabase()
        let holder = Store(connection: try database.connect())
        let switching = DispatchSemaphore(value: 0)
        let report = try importing(
            into: database, onStep: { if $0 == .switching { switching.signal() } },
            whileGated: {
                for statement in holding.statements { try holder.connection.execute(script: statement) }
            },
            whileFinishing: {
                try #require(switching.wait(timeout: .now() + 60) == .success)
                // The switch now asks for its locks again and again, holding none meanwhile: readers that come
                // queue behind each request for at most `SideTables.lockWaitMilliseconds`, then read the store as
                // it was.
                let reader = Store(connection: try database.connect())
                try reader.setLockTimeout(.seconds(2))
                for _ in 0..<5 {
                    expectSameText(try exportJSON(reader), before)
                    Thread.sleep(forTimeInterval: 0.1)
                }
                try holder.connection.execute("ROLLBACK")
            })
        #expect(report.readersLockedOut == nil)
        expectSameText(try exportJSON(holder), try exported(try Self.after.get()))
    }

    @Test func aViewOverAnAppTableOfItsOwnDoesNotTieTheSwitchToThatTable() throws {
        let (database, _) = try makeDatabase()
        let app = Store(connection: try database.connect())
        try app.connection.execute(
            script: """
                CREATE TABLE app_settings (uid text PRIMARY KEY, theme text);
                CREATE VIEW user_themes AS SELECT u.uid, s.theme FROM users u LEFT JOIN app_settings s USING (uid);
                """)
        let after = try exported(try Self.after.get())
        let report = try importing(
            into: database,
            whileGated: {
                // The app writes its own table in a transaction that stays open past the switch.
                try app.connection.execute("BEGIN")
                try app.connection.execute("INSERT INTO app_settings VALUES ('u', 'dark')")
            },
            whileFinishing: {
                let reader = Store(connection: try database.connect())
                let deadline = Date().addingTimeInterval(60)
                var switched = false
                while !switched, Date() < deadline {
                    switched = try exportJSON(reader).utf8.elementsEqual(after.utf8)
                    if !switched { Thread.sleep(forTimeInterval: 0.1) }
                }
                #expect(switched, "the switch waited for a transaction that only wrote the app's own table")
                try app.connection.execute("COMMIT")
            })
        #expect(report.readersLockedOut == nil)
        #expect(try app.connection.query("SELECT count(*)::int8 FROM user_themes")[0].decode(Int.self, at: 0) > 0)
    }
}
