import Foundation
import PostgresClient
import PostgresTestSupport
import Testing

@testable import Storage

/// `(path, kind)` of each difference `verify` lists.
private func verified(_ store: Store, against json: String, at path: [String] = []) throws -> [String] {
    let report = try store.verify(source: MemorySource(json, chunkSize: 4096), options: VerifyOptions(at: path))
    #expect(report.differenceCount == report.differences.count)
    #expect(report.isEqual == report.differences.isEmpty)
    return report.differences.map { "/" + $0.path.joined(separator: "/") + " " + $0.kind.rawValue }
}

@Suite("verify against the export a store came from")
struct VerifyTests {
    @Test(arguments: [
        GeneratorOptions(users: 60, seed: 21),
        GeneratorOptions(users: 60, seed: 22, dialect: .appcoda),
        GeneratorOptions(users: 60, seed: 23, plantsAnomalies: true, output: JSONTextWriter.Options(isPretty: true)),
    ])
    func aGeneratedExportVerifiesEqualAfterImport(_ options: GeneratorOptions) throws {
        let generated = try generate(options)
        let store = try makeStore()
        try importJSON(generated.json, into: store)
        #expect(try verified(store, against: generated.json) == [])
    }

    @Test func theFriendlyPixFixtureVerifiesEqualAfterImport() throws {
        let fixture = try String(
            contentsOf: fixtureDirectory.appendingPathComponent("friendlypix-console-export.json"), encoding: .utf8)
        let store = try makeStore()
        try importJSON(fixture, into: store)
        let report = try store.verify(source: MemorySource(fixture))
        #expect(report.isEqual, "\(report.differences)")
        #expect(report.nodesCompared > 2000)
        #expect(
            try store.verify(source: MemorySource(fixture), options: VerifyOptions(ignoringPriorities: true)).isEqual)
    }

    @Test func storeChangesMadeBySQLAreListedExactly() throws {
        let generated = try generate(GeneratorOptions(users: 40, seed: 5))
        let database = try TestPostgres.makeDatabase()
        let store = Store(connection: try database.connect())
        try importJSON(generated.json, into: store)
        let sql = try database.connect()
        let user = try sql.query("SELECT uid FROM users ORDER BY uid COLLATE \"C\" LIMIT 1")[0].decode(
            String.self, at: 0)
        try sql.execute("UPDATE users SET username = 'renamed' WHERE uid = \(user)")
        // One follow of a user who has others, so that the user's node stays.
        let follow = try sql.query(
            """
            SELECT uid, min(followee_uid COLLATE "C") FROM following GROUP BY uid HAVING count(*) > 1 ORDER BY 1 LIMIT 1
            """)[0]
        let (follower, followee) = (try follow.decode(String.self, at: 0), try follow.decode(String.self, at: 1))
        try sql.execute("DELETE FROM following WHERE uid = \(follower) AND followee_uid = \(followee)")
        // A value no table types lands in unmapped_values.
        _ = try store.write(.set(json: "7"), at: ["zzz", "added"])
        let differences = try verified(store, against: generated.json)
        #expect(
            differences
                == [
                    "/following/\(follower)/\(followee) missing", "/users/\(user)/username changed", "/zzz extra",
                ].sorted { FirebaseKey.compare($0, $1) < 0 })
        // Put right by importing the export again.
        try importJSON(generated.json, into: store)
        #expect(try verified(store, against: generated.json) == [])
    }

    @Test func fileChangesAreListedTheSameWay() throws {
        let generated = try generate(GeneratorOptions(users: 30, seed: 9))
        let store = try makeStore()
        try importJSON(generated.json, into: store)
        var tree = try #require(try TreeValue.parse(json: generated.json))
        let uid = try #require(tree["users"]?.orderedKeys.first)
        let post = try #require(tree["posts"]?.orderedKeys.first)
        let key = try #require(tree["posts"]?[post]?.orderedKeys.first)
        tree.set(.number(12345), at: ["posts", post, key, "image_height"])
        guard case .object(var users) = tree["users"]! else { Issue.record("users is not an object"); return }
        users[TreeKey(uid)] = nil
        tree.set(.object(users), at: ["users"])
        tree.set(.string("new"), at: ["users", "zz-new-user", "username"])
        var writer = JSONTextWriter()
        writer.value(tree)
        let differences = try verified(store, against: String(decoding: writer.bytes, as: UTF8.self))
        #expect(
            differences == [
                "/posts/\(post)/\(key)/image_height changed", "/users/\(uid) extra", "/users/zz-new-user missing",
            ])
    }

    /// The issue's property: random trees, written as a script would (keys shuffled or repeated, arrays, nulls),
    /// imported, then changed in the store by SQL (a typed column, a typed row deleted, an unmapped value added,
    /// a priority changed): verify lists exactly the changed paths with their kinds, as a plain diff of the two
    /// trees in memory says; after a re-import it finds none.
    @Test func randomTreesChangedBySQLListExactlyTheChanges() throws {
        var mutations: [String: Int] = [:]
        var sortedCount = 0
        for seed in 0..<12 {
            var random = RandomTree(seed: seed + 900)
            let tree = random.database()
            let json = random.json(tree)
            let database = try TestPostgres.makeDatabase()
            let store = Store(connection: try database.connect())
            try importJSON(json, into: store)
            #expect(try store.verify(source: MemorySource(json)).isEqual, "seed \(seed)")

            let sql = try database.connect()
            var changed: TreeValue? = tree
            if let row = try sql.query(
                """
                UPDATE users SET username = 'renamed by SQL'
                WHERE uid = (SELECT min(uid) FROM users WHERE username IS NOT NULL) RETURNING uid
                """
            ).first {
                changed?.set(.string("renamed by SQL"), at: ["users", try row.decode(String.self, at: 0), "username"])
                mutations["typed column", default: 0] += 1
            }
            if let row = try sql.query(
                """
                DELETE FROM posts WHERE (owner_uid, post_key) = (SELECT owner_uid, post_key FROM posts ORDER BY 1, 2 LIMIT 1)
                RETURNING owner_uid, post_key
                """
            ).first {
                changed = changed?.removing([
                    "posts", try row.decode(String.self, at: 0), try row.decode(String.self, at: 1),
                ])
                mutations["typed row", default: 0] += 1
            }
            try sql.execute(
                """
                INSERT INTO unmapped_values (root, path, number_value, sort_key)
                VALUES ('zz added by SQL', '{n}', 7, rtdb_path_order('zz added by SQL', '{n}'))
                """)
            changed?.set(.number(7), at: ["zz added by SQL", "n"])
            if let row = try sql.query(
                """
                UPDATE unmapped_values SET string_value = NULL, number_value = 99, boolean_value = NULL
                WHERE (root, path) = (SELECT root, path FROM unmapped_values WHERE path[cardinality(path)] = '.priority'
                                      ORDER BY 1, 2 LIMIT 1)
                RETURNING root, path
                """
            ).first {
                let path = [try row.decode(String.self, at: 0)] + (try row.decode([String].self, at: 1))
                changed?.set(.number(99), at: path[...])
                mutations["priority", default: 0] += 1
            }

            let report = try store.verify(source: MemorySource(json))
            let listed = report.differences.map { "/" + $0.path.joined(separator: "/") + " " + $0.kind.rawValue }
            #expect(listed.sorted() == treeDifferences(tree, changed).sorted(), "seed \(seed)")
            if report.sortedBecause != nil { sortedCount += 1 }

            try importJSON(json, into: store)
            #expect(try store.verify(source: MemorySource(json)).isEqual, "seed \(seed)")
        }
        // Each kind of change was tried on some seed.
        #expect(mutations.keys.sorted() == ["priority", "typed column", "typed row"], "\(mutations)")
        #expect(sortedCount > 0)
    }

    /// A source with an object out of order is read with that object sorted, found by a scan beside the reading,
    /// or, where a key the scan meets has an escape, by the token scan first; read once (stdin) or opened again.
    @Test func objectsOutOfOrderAreSortedWhateverTheirKeys() throws {
        let store = try makeStore()
        // Most of the document in order (the object sorted alone is less than half of it).
        let config = #""config":{"note":""# + String(repeating: "n", count: 400) + #""},"#
        try importJSON(
            "{" + config + #""users":{"a":{"username":"x"},"b":{"username":"z"},"q\"k":{"username":"y"}}}"#,
            into: store)
        for json in [
            "{" + config + #""users":{"a":{"username":"x"},"q\"k":{"username":"y"},"b":{"username":"z"}}}"#,
            "{" + config + #""users":{"b":{"username":"z"},"a":{"username":"x"},"q\"k":{"username":"y"}}}"#,
        ] {
            for report in [
                try store.verify(source: MemorySource(json, chunkSize: 5)),
                try store.verify(opening: { MemorySource(json, chunkSize: 3) }),
            ] {
                #expect(report.isEqual, "\(json): \(report.differences)")
                #expect(report.sortedBecause?.hasSuffix("(1 object sorted)") == true, "\(report.sortedBecause ?? "")")
            }
        }
        // One missing among them is found.
        let missing = "{" + config + #""users":{"q\"k":{"username":"y"},"a":{"username":"x"}}}"#
        #expect(try verified(store, against: missing) == ["/users/b extra"])
        // Keys without escapes: the scan beside the reading settles it, /users's appended "b" merged in its place
        // and the object out of order before it sorted.
        try importJSON(#"{"users":{"a":{"username":"x"},"b":{"username":"z"},"c":{"n":{"y":1,"z":2}}}}"#, into: store)
        let plain = #"{"users":{"a":{"username":"x"},"c":{"n":{"z":2,"y":1}},"b":{"username":"z"}}}"#
        for report in [
            try store.verify(source: MemorySource(plain, chunkSize: 5)),
            try store.verify(opening: { MemorySource(plain, chunkSize: 3) }),
        ] {
            #expect(report.isEqual, "\(report.differences)")
            #expect(report.sortedBecause?.hasSuffix("(2 objects sorted)") == true, "\(report.sortedBecause ?? "")")
        }
    }

    @Test(arguments: 0..<8)
    func randomTreesVerifyEqualAfterImportAndOneChangeIsFound(seed: Int) throws {
        var random = RandomTree(seed: seed + 300)
        let tree = random.database()
        let store = try makeStore()
        try importJSON(random.json(tree), into: store)
        var writer = JSONTextWriter(options: .init(rendersArrays: seed % 2 == 0))
        writer.value(tree)
        let canonical = String(decoding: writer.bytes, as: UTF8.self)
        #expect(try verified(store, against: canonical) == [])
        let first = tree.orderedKeys.first!
        _ = try store.write(.remove, at: [first])
        #expect(try verified(store, against: canonical) == ["/\(first) missing"])
    }
}

/// `path kind` of each place where `store` differs from `source`, as verify defines them, from the trees in
/// memory: the shallowest path on one side only, or a leaf that differs (a leaf with a priority is a leaf).
private func treeDifferences(_ source: TreeValue?, _ store: TreeValue?, at path: [String] = []) -> [String] {
    let here = "/" + path.joined(separator: "/")
    switch (source, store) {
    case (nil, nil): return []
    case (_, nil): return ["\(here) missing"]
    case (nil, _): return ["\(here) extra"]
    case (.object(let a)?, .object(let b)?):
        let valueA = a[FirebaseKey.value], valueB = b[FirebaseKey.value]
        if valueA != nil || valueB != nil, valueA != valueB { return ["\(here) changed"] }
        let keys = Set(a.keys).union(b.keys).filter { $0 != FirebaseKey.value }
        return keys.flatMap { treeDifferences(a[$0], b[$0], at: path + [$0.string]) }
    default:
        return source == store ? [] : ["\(here) changed"]
    }
}
