import FirebaseTree
import Foundation
import PostgresTestSupport
import Testing
import TreeTestSupport

@testable import Storage

/// How a child of /posts is stored (an AppCoda feed post, or a Makestagram owner's posts) is a property of the
/// tree: the same tree gives the same rows whatever order a file writes its keys in and whichever writer stores
/// it (issue 70). Rows are compared, not only exports.
@Suite("The shape of /posts's children")
struct PostsShapeTests {
    /// Every row of the tree's tables and lookups, as text, per table, in order: what two stores holding the same
    /// tree the same way hold alike.
    static func rows(_ store: Store) throws -> [String: [String]] {
        var rows: [String: [String]] = [:]
        for table in Store.treeTables + Store.lookupTables {
            rows[table] = try store.connection.query(
                "SELECT t::text FROM \(identifier: table) t ORDER BY t::text COLLATE \"C\""
            ).map { try $0.decode(String.self, at: 0) }
        }
        return rows
    }

    /// How the children of /posts are stored: the feed posts' ids and the owners' posts' keys, in order. Where a
    /// record budget differs, the fields beyond it lie elsewhere, but not the records.
    static func shapes(_ store: Store) throws -> [String] {
        try store.connection.query(
            """
            SELECT shape FROM (
                SELECT 'feed ' || post_id FROM feed_posts UNION ALL SELECT 'post ' || owner_uid || '/' || post_key FROM posts
            ) s(shape) ORDER BY shape COLLATE "C"
            """
        ).map { try $0.decode(String.self, at: 0) }
    }

    /// `value` as JSON with every object's keys in an order `random` picks.
    static func shuffledJSON(_ value: TreeValue, _ random: inout SeededGenerator) -> String {
        guard case .object(let children) = value else {
            var writer = JSONTextWriter()
            writer.value(value)
            writer.finish()
            return String(decoding: writer.bytes, as: UTF8.self)
        }
        var keys = Array(children.keys)
        keys.shuffle(using: &random)
        let members = keys.map { key -> String in
            var quoted: [UInt8] = []
            var text = key.string
            text.withUTF8 { JSONTextWriter.appendQuoted($0, to: &quoted) }
            return String(decoding: quoted, as: UTF8.self) + ":" + shuffledJSON(children[key]!, &random)
        }
        return "{" + members.joined(separator: ",") + "}"
    }

    /// A /posts of every shape a child of it takes, and of those whose first key decided it before: owners'
    /// posts, feed posts, owners' posts with a leaf (a count), feed posts with an object field, an object under
    /// an AppCoda key, a priority, an empty child, a leaf.
    static func posts(_ random: inout SeededGenerator) -> TreeValue {
        func object(_ children: [String: TreeValue]) -> TreeValue {
            .object(Dictionary(uniqueKeysWithValues: children.map { (TreeKey($0.key), $0.value) }))
        }
        func post(_ n: Int) -> TreeValue {
            object([
                "image_url": .string("https://x/\(n).jpg"), "image_height": .number(Double(100 + n)),
                "created_at": .number(1_700_000_000.5),
                "poster": object(["uid": .string("u\(n)"), "username": .string("n\(n)")]),
            ])
        }
        var children: [String: TreeValue] = [:]
        for index in 0..<Int(random.next() % 6 + 4) {
            let id = random.next() % 2 == 0 ? "u\(index)" : "-Nx\(index)aZ"
            switch random.next() % 8 {
            case 0:
                children[id] = object(["-Nb\(index)": post(index), "-Nc\(index)": post(index + 1)])
            case 1:
                children[id] = object([
                    "imageFileURL": .string("https://f/\(index).png"), "user": .string("ana"), "votes": .number(3),
                    "timestamp": .number(1_700_000_000_000),
                ])
            case 2:
                children[id] = object(["-Nb\(index)": post(index), "count": .number(2)])
            case 3:
                children[id] = object([
                    "user": .string("bo"), "location": object(["lat": .number(1.5), "lng": .number(2)]),
                ])
            case 4:
                children[id] = object(["user": object(["name": .string("cy")]), "-Nd\(index)": post(index)])
            case 5:
                children[id] = object([".priority": .number(5), "-Ne\(index)": post(index)])
            case 6:
                children[id] = object(["a": object(["b": .bool(true)]), "z": .string("last")])
            default:
                children[id] = .string("a leaf")
            }
        }
        return object(["posts": object(children), "users": object(["u1": object(["username": .string("ana")])])])
    }

    /// The same tree stores the same rows whichever order its keys come in, through an import (one session or
    /// two, a whole tree or a merge), a sync into an empty store and again, and a write verb; with a record
    /// budget small enough that owners' posts stream before a leaf reshapes them too.
    @Test(arguments: 0..<6)
    func theSameTreeGivesTheSameRowsInAnyKeyOrderFromAnyWriter(seed: UInt64) throws {
        var random = SeededGenerator(state: 7_000 + seed)
        let tree = Self.posts(&random)
        let reference = try makeStore()
        try importJSON(tree.json, into: reference)
        let expected = try Self.rows(reference)
        let exported = try exportJSON(reference)
        for order in 0..<3 {
            let json = Self.shuffledJSON(tree, &random)
            let context = "seed \(seed), order \(order): \(json)"
            let shapes = try Self.shapes(reference)
            func expectSame(
                _ store: Store, _ writer: String, budgeted: Bool = false,
                sourceLocation: SourceLocation = #_sourceLocation
            ) throws {
                if budgeted {
                    // The records are where they are in the reference; their fields past 64 bytes elsewhere.
                    #expect(try Self.shapes(store) == shapes, "\(writer): \(context)", sourceLocation: sourceLocation)
                } else {
                    #expect(try Self.rows(store) == expected, "\(writer): \(context)", sourceLocation: sourceLocation)
                }
                expectSameText(try exportJSON(store), exported, sourceLocation: sourceLocation)
                #expect(
                    try store.check([.postsShape]).allSatisfy(\.isClean), "\(writer)", sourceLocation: sourceLocation)
            }
            let imported = try makeStore()
            try importJSON(json, into: imported)
            try expectSame(imported, "import")
            var tight = ImportOptions()
            tight.recordMemoryBudget = 64
            let reshaped = try makeStore()
            try importJSON(json, into: reshaped, options: tight)
            try expectSame(reshaped, "import, 64-byte budget", budgeted: true)
            let parallel = try makeStore()
            try importJSON(json, into: parallel, options: tight, jobs: 2)
            try expectSame(parallel, "import --jobs 2, 64-byte budget", budgeted: true)
            let merged = try makeStore()
            try importJSON(json, into: merged, options: ImportOptions(mode: .merge))
            try expectSame(merged, "import --mode merge")
            let synced = try makeStore()
            _ = try synced.sync(opening: { MemorySource(json) }, options: SyncOptions(sortingFirst: true))
            try expectSame(synced, "sync into an empty store")
            let written = try makeStore()
            _ = try written.write(.set(json: json), at: [], allowsEmptying: true)
            try expectSame(written, "set /")
            _ = try synced.sync(opening: { MemorySource(json) }, options: SyncOptions(sortingFirst: true))
            try expectSame(synced, "a second sync")
        }
    }

    /// The example of the issue: a record whose first key in the file is a leaf and in RTDB order an object.
    @Test func aRemovalInsideARecordWhoseFirstKeyIsALeafConverges() throws {
        let store = try makeStore()
        try importJSON(#"{"posts":{"p":{"b":"1","a":{"x":1,"y":2}}}}"#, into: store)
        let newer = #"{"posts":{"p":{"a":{"x":1},"b":"1"}}}"#
        let report = try store.sync(opening: { MemorySource(newer) })
        #expect(report.rewrites == 1)
        expectSameText(try exportJSON(store), newer)
        #expect(try store.verify(source: MemorySource(newer)).isEqual)
        let again = try store.sync(opening: { MemorySource(newer) })
        #expect(again.rewrites == 0 && again.rowsWritten == 0 && again.rowsDeleted == 0)
    }

    /// An owner's posts past the record budget stream as posts; a leaf after them makes the node a feed post,
    /// which the import stores again whole once its rows are in, and counts so.
    @Test func anOwnersPostsThatALateLeafMakesAFeedPostAreStoredAgainWhole() throws {
        var posts = (0..<40).map {
            #""-N\#(String(format: "%03d", $0))":{"image_url":"u\#($0)","image_height":\#($0)}"#
        }
        posts.append(#""votes":7"#)
        let json = #"{"posts":{"alice":{"# + posts.joined(separator: ",") + "}}}"
        var options = ImportOptions()
        options.recordMemoryBudget = 200
        for jobs in [1, 2] {
            let store = try makeStore()
            let report = try importJSON(json, into: store, options: options, jobs: jobs)
            let counts = try store.status().tableRows
            #expect(counts.first { $0.table == "feed_posts" }?.rows == 1, "jobs \(jobs)")
            #expect(counts.first { $0.table == "posts" }?.rows == 0, "jobs \(jobs)")
            // The report counts the rows as they ended: the feed post, and its fields past the budget.
            for line in report.lines where line.node == "posts" {
                #expect(line.rowsImported == counts.first { $0.table == line.table }?.rows, "\(report.lines)")
            }
            #expect(report.lines.contains { $0.table == "feed_posts" && $0.rowsImported == 1 }, "\(report.lines)")
            #expect(try store.check([.postsShape]).allSatisfy(\.isClean))
            let reference = try makeStore()
            try importJSON(json, into: reference)
            expectSameText(try exportJSON(store), try exportJSON(reference))
            #expect(try Self.shapes(store) == Self.shapes(reference))
        }
    }

    /// A write inside a child of /posts can change its shape: removing an owner's last leaf makes it an owner's
    /// posts, adding one to an owner's posts a feed post; and a store written by an earlier version (rows placed
    /// by hand here) is found by `posts_shape` and stored again by its repair, the tree unchanged.
    @Test func writesInsideAChildKeepItsShapeAndTheRepairFixesOldStores() throws {
        let store = try makeStore()
        try importJSON(#"{"posts":{"u1":{"-Na":{"image_url":"x"},"count":5}}}"#, into: store)
        func rows(_ table: String) throws -> Int {
            try store.connection.query("SELECT count(*) FROM \(identifier: table)")[0].decode(Int.self, at: 0)
        }
        #expect(try rows("feed_posts") == 1 && rows("posts") == 0)
        _ = try store.write(.remove, at: ["posts", "u1", "count"])
        #expect(try rows("feed_posts") == 0 && rows("posts") == 1)
        _ = try store.write(.set(json: "true"), at: ["posts", "u1", "flag"])
        #expect(try rows("feed_posts") == 1 && rows("posts") == 0)
        _ = try store.write(.update(json: #"{"flag": null, "-Nb": {"image_url": "y"}}"#), at: ["posts", "u1"])
        #expect(try rows("feed_posts") == 0 && rows("posts") == 2)
        #expect(try store.check([.postsShape]).allSatisfy(\.isClean))

        // As an earlier version stored them: a feed post of objects only, and an owner's posts with a leaf.
        try store.connection.execute(
            script: """
                INSERT INTO feed_posts (post_id, extra) VALUES ('f1', '{"loc": {"lat": 1}}');
                INSERT INTO posts (owner_uid, post_key, image_url) VALUES ('o1', '-Nz', 'z');
                INSERT INTO unmapped_values (root, path, number_value, sort_key)
                    VALUES ('posts', ARRAY['o1', 'n'], 3, rtdb_path_order('posts', ARRAY['o1', 'n']))
                """)
        let before = try exportJSON(store)
        let found = try store.check([.postsShape], examples: 5)
        #expect(found.first?.violations == 2)
        #expect(found.first?.examples == ["/posts/f1", "/posts/o1"])
        let report = try store.repair(.postsShape)
        #expect(!report.changes.isEmpty)
        #expect(try store.check([.postsShape]).allSatisfy(\.isClean))
        expectSameText(try exportJSON(store), before)
        #expect(try rows("feed_posts") == 1)  // o1 now
        #expect(try rows("posts") == 3)  // u1's two and f1's loc
    }
}
