import Foundation
import PostgresClient
import PostgresTestSupport
import Testing
import TreeTestSupport

@testable import Storage

/// A whole-tree import drops the secondary indexes after its TRUNCATE and builds them once the rows are in
/// (`DeferredIndexes`): whatever happens, the store ends with the indexes it had, holding what they should.
@Suite("Indexes built after a whole-tree import's rows")
struct DeferredIndexesTests {
    /// A tree whose keys land in the partial indexes (digit-led and U+E000 keys) as well as outside them.
    static let tree =
        consistentTree
        .setting("users/42", #"{"username": "answer"}"#)
        .setting("users/\u{E000}x", #"{"username": "private use"}"#)
        .setting("following/42", #"{"alice": true}"#)
        .setting("followers/alice", #"{"42": true, "carol": true}"#)

    /// The primary keys of the store's tables as the catalog states them.
    static func primaryKeys(_ store: Store) throws -> [String] {
        try store.connection.query(
            """
            SELECT conrelid::regclass::text || ' ' || conname || ' ' || pg_get_constraintdef(oid) FROM pg_constraint
            WHERE contype = 'p' AND conrelid = ANY(\(Store.treeTables + Store.lookupTables)::regclass[]) ORDER BY 1
            """
        ).map { try $0.decode(String.self, at: 0) }
    }

    /// Every index of the store's tables: name, definition, validity and object id.
    struct IndexState: Equatable {
        var name: String
        var definition: String
        var isValid: Bool
        var oid: Int
    }

    /// The indexes of the tree's tables and lookups, by name.
    static func indexes(_ store: Store) throws -> [IndexState] {
        try store.connection.query(
            """
            SELECT c.relname, pg_get_indexdef(i.indexrelid), i.indisvalid, i.indexrelid::oid::bigint
            FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
            WHERE i.indrelid = ANY(\(Store.treeTables + Store.lookupTables)::regclass[])
            ORDER BY c.relname
            """
        ).map {
            IndexState(
                name: try $0.decode(String.self, at: 0), definition: try $0.decode(String.self, at: 1),
                isValid: try $0.decode(Bool.self, at: 2), oid: try $0.decode(Int.self, at: 3))
        }
    }

    /// The same indexes by name and definition, all valid.
    static func expectSameIndexes(
        _ after: [IndexState], _ before: [IndexState], sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(after.map(\.name) == before.map(\.name), sourceLocation: sourceLocation)
        #expect(after.map(\.definition) == before.map(\.definition), sourceLocation: sourceLocation)
        #expect(after.allSatisfy { $0.isValid }, sourceLocation: sourceLocation)
    }

    /// Every index of the store's tables holds exactly the rows it should: amcheck walks each one and looks up
    /// every row of its table that belongs in it (`heapallindexed`), and fails on anything missing or misplaced.
    static func expectIndexesHoldTheirRows(_ store: Store) throws {
        try store.connection.execute("CREATE EXTENSION IF NOT EXISTS amcheck")
        let checked = try store.connection.query(
            """
            SELECT count(bt_index_check(i.indexrelid, true)) FROM pg_index i
            WHERE i.indrelid = ANY(\(Store.treeTables + Store.lookupTables)::regclass[])
            """)
        #expect(try checked[0].decode(Int.self, at: 0) > 20)
    }

    /// The keys the users' partial index orders (digit-led and U+E000 keys).
    static func orderedUsers(_ store: Store) throws -> [String] {
        try store.connection.query(
            "SELECT uid FROM users WHERE rtdb_key_needs_order(uid) ORDER BY rtdb_key_order(uid) COLLATE \"C\""
        ).map { try $0.decode(String.self, at: 0) }
    }

    @Test func theIndexesComeBackAsTheyWereAndHoldTheNewRows() throws {
        let store = try makeStore()
        let before = try Self.indexes(store)
        #expect(before.contains { $0.name == "timeline_key_order" })
        try importJSON(Self.tree.json, into: store)
        let after = try Self.indexes(store)
        Self.expectSameIndexes(after, before)
        // They are the indexes of the tables the import filled beside the store's and switched in: new objects.
        for (old, new) in zip(before, after) {
            #expect(old.oid != new.oid, "\(old.name)")
        }
        #expect(try Self.primaryKeys(store) == Self.primaryKeys(makeStore()))
        #expect(try Self.orderedUsers(store) == ["42", "\u{E000}x"])
        try Self.expectIndexesHoldTheirRows(store)
        try expectTree(store, Self.tree)
        // A second whole-tree import over a full store does the same.
        try importJSON(consistentTree.json, into: store)
        Self.expectSameIndexes(try Self.indexes(store), before)
        try Self.expectIndexesHoldTheirRows(store)
    }

    /// What follows the reading is told step by step, for the progress display: the likes, the lookups, each
    /// index in turn, then each table's statistics; a merge keeps its indexes and builds none.
    @Test func theStepsAfterTheReadingAreTold() throws {
        let store = try makeStore()
        // Loaded beside the store's tables, the twins get every index, primary keys too, after their rows.
        let dropped = try Self.indexes(store).map(\.name)
        var steps: [ImportStep] = []
        let report = try store.importTree(
            from: MemorySource(Self.tree.json), observer: ImportObserver(onStep: { steps.append($0) }))
        // The report times them by what they wrote, the index builds together.
        #expect(
            report.finishing.map(\.target) == [
                "post_likes", "post_keys", "chat_holders", "indexes", "statistics", ImportReport.Finishing.switch,
                ImportReport.Finishing.commit,
            ])
        let analyzed = Store.treeTables + Store.lookupTables
        #expect(report.finishing.map(\.count) == [1, 1, 1, dropped.count, analyzed.count, 1, 1])
        #expect(
            report.finishing.allSatisfy { $0.seconds > 0 }
                && report.finishing.map(\.seconds).reduce(0, +) < report.seconds)
        let builds = dropped.enumerated().map {
            ImportStep.buildingIndex(name: $1, number: $0 + 1, count: dropped.count)
        }
        #expect(
            steps == [.storingLikes, .fillingLookup(table: "post_keys"), .fillingLookup(table: "chat_holders")] + builds
                + analyzed.map { .analyzing(tables: [$0]) } + [.switching, .committing])
        #expect(
            builds.last?.description == "building index \(dropped.count) of \(dropped.count): \(dropped.last!)")
        #expect(steps.dropLast(2).last?.description == "gathering statistics on chat_holders (ANALYZE)")

        steps = []
        let post =
            #"{"-Pnew": {"image_url": "u", "image_height": 1, "created_at": 1, "like_count": 0, "poster": {"uid": "bob", "username": "bob"}}}"#
        _ = try store.importTree(
            from: MemorySource(#"{"posts": {"bob": \#(post)}}"#), options: ImportOptions(mode: .merge),
            observer: ImportObserver(onStep: { steps.append($0) }))
        #expect(steps == [.fillingLookup(table: "post_keys"), .settlingLikes])
    }

    /// Shapes of real exports, in every table whose indexes are built after the rows: all-digit keys (arrays of
    /// users, of a timeline, of likes), push IDs that start with `-` and hold y and h, a 3 MB value, control
    /// characters and escapes; then the friendlypix console export.
    @Test func realShapesLandInTheRebuiltIndexes() throws {
        let photo = String(repeating: "iVBORw0KGgo", count: 300_000)
        let tree = #"""
            {"users": [{"username": "zero"}, {"username": "esc\u001b[31m\u0007\t"}],
             "following": {"0": {"1": true, "-Kyh0Ah": true}}, "followers": {"1": [true]},
             "posts": {"0": {"-Kyh0Ah": {"image_url": "\#(photo)", "like_count": 1}}},
             "postLikes": {"-Kyh0Ah": [true, true]},
             "timeline": {"1": {"-Kyh0Ah": {"poster_uid": "0"}}, "2": [{"poster_uid": "\u0001"}]},
             "chats": {"0": {"-Ch\u00e9y": {"title": "\u001b]0;pwned\u0007", "members": {"0": true, "1": true}}}},
             "messages": {"-Ch\u00e9y": {"12": {"content": "\\n\r\n", "timestamp": 1500000000000}}},
             "log": {"1700000000000": "a", "1700000000001": "b"}}
            """#
        let fixture = try String(
            contentsOf: fixtureDirectory.appendingPathComponent("friendlypix-console-export.json"), encoding: .utf8)
        for json in [tree, fixture] {
            let store = try makeStore()
            let before = try Self.indexes(store)
            try importJSON(json, into: store)
            Self.expectSameIndexes(try Self.indexes(store), before)
            try Self.expectIndexesHoldTheirRows(store)
            #expect(try TreeValue.parse(json: exportJSON(store)) == TreeValue.parse(json: json))
        }
    }

    @Test func aRolledBackImportLeavesTheIndexesItFound() throws {
        let store = try consistentStore(Self.tree)
        let before = try Self.indexes(store)
        try importJSON(consistentTree.json, into: store, options: ImportOptions(isDryRun: true))
        #expect(try Self.indexes(store) == before)
        // Malformed at the end: everything was read and loaded, the indexes dropped, then it all rolls back.
        let broken = String(consistentTree.json.dropLast()) + ", \"zzz\" 1}"
        #expect(throws: StorageError.self) { try importJSON(broken, into: store) }
        #expect(try Self.indexes(store) == before)
        try expectTree(store, Self.tree)
        try Self.expectIndexesHoldTheirRows(store)
    }

    /// A repeated key the loader can no longer roll back is deleted from the tables (by `sort_key` for unmapped
    /// values, so the indexes are built before that DELETE, and the rest of the file loads into them).
    @Test func aRepeatedKeyMidwayLeavesTheIndexesWhole() throws {
        let store = try makeStore()
        let before = try Self.indexes(store)
        let file = """
            {"settings": {"theme": "dark", "size": 3}, "users": {"42": {"username": "first"}},
             "settings": {"theme": "light"}, "users": {"42": {"username": "answer"}, "bob": {"username": "bob"}}}
            """
        let report = try importJSON(file, into: store)
        #expect(report.warningCount == 2)
        Self.expectSameIndexes(try Self.indexes(store), before)
        try expectTree(
            store,
            TreeValue.parse(
                json:
                    #"{"settings": {"theme": "light"}, "users": {"42": {"username": "answer"}, "bob": {"username": "bob"}}}"#
            )!)
        #expect(try Self.orderedUsers(store) == ["42"])
        try Self.expectIndexesHoldTheirRows(store)
    }

    /// Indexes an operator added come back the same, their options, comments and statistics targets too.
    @Test func anOperatorsIndexesAreKeptWhole() throws {
        let store = try consistentStore()
        let connection = store.connection
        try connection.execute("CREATE INDEX timeline_poster ON timeline (poster_uid) WITH (fillfactor = 70)")
        try connection.execute("CREATE INDEX users_username ON users (lower(username))")
        try connection.execute("COMMENT ON INDEX users_username IS 'for the search page'")
        try connection.execute("CREATE INDEX posts_height ON posts ((image_height * 2))")
        try connection.execute("ALTER INDEX posts_height ALTER COLUMN 1 SET STATISTICS 500")
        let before = try Self.indexes(store)
        try importJSON(Self.tree.json, into: store)
        let after = try Self.indexes(store)
        Self.expectSameIndexes(after, before)
        let comment = try connection.query("SELECT obj_description('users_username'::regclass, 'pg_class')")
        #expect(try comment[0].decode(String.self, at: 0) == "for the search page")
        let statistics = try connection.query(
            "SELECT attstattarget::int8 FROM pg_attribute WHERE attrelid = 'posts_height'::regclass AND attnum = 1")
        #expect(try statistics[0].decode(Int.self, at: 0) == 500)
        try Self.expectIndexesHoldTheirRows(store)
    }

    /// `keepsIndexes` (`--keep-indexes`) loads into tables that have every index from the start.
    @Test func keepingTheIndexesLoadsIntoThem() throws {
        let store = try consistentStore()
        let before = try Self.indexes(store)
        var steps: [ImportStep] = []
        let report = try store.importTree(
            from: MemorySource(Self.tree.json), options: ImportOptions(keepsIndexes: true),
            observer: ImportObserver(onStep: { steps.append($0) }))
        Self.expectSameIndexes(try Self.indexes(store), before)
        #expect(!steps.contains { if case .buildingIndex = $0 { true } else { false } })
        #expect(!report.finishing.contains { $0.target == "indexes" })
        try expectTree(store, Self.tree)
        try Self.expectIndexesHoldTheirRows(store)
    }

    /// DROP INDEX needs the tables' owner: a role that may only write them imports with the indexes in place.
    @Test func aRoleThatDoesNotOwnTheTablesImportsWithTheIndexesInPlace() throws {
        let database = try TestPostgres.makeDatabase()
        let owner = Store(connection: try database.connect())
        try importJSON(consistentTree.json, into: owner)
        let role = "writer_" + database.name
        try owner.connection.execute("CREATE ROLE \(identifier: role)")
        try owner.connection.execute("GRANT ALL ON ALL TABLES IN SCHEMA public TO \(identifier: role)")
        try owner.connection.execute("GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO \(identifier: role)")
        defer {
            _ = try? owner.connection.execute("DROP OWNED BY \(identifier: role)")
            _ = try? owner.connection.execute("DROP ROLE \(identifier: role)")
        }
        let before = try Self.indexes(owner)
        let writer = Store(connection: try database.connect())
        try writer.connection.execute("SET ROLE \(identifier: role)")
        try importJSON(Self.tree.json, into: writer)
        #expect(try Self.indexes(owner) == before)
        try expectTree(owner, Self.tree)
        try Self.expectIndexesHoldTheirRows(owner)
    }
}
