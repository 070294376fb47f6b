import Foundation
import PostgresClient
import PostgresTestSupport
import Testing
@testable import Storage

/// `(path, kind)` of each difference `verify` lists.
private func verified(_ store: Store, against json: String, at path: [String] = []) throws -> [String] {
    let report = try store.verify(source: MemorySource(json, chunkSize: 4096), at: path)
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
        #expect(try store.verify(source: MemorySource(fixture), ignoringPriorities: true).isEqual)
    }

    @Test func storeChangesMadeBySQLAreListedExactly() throws {
        let generated = try generate(GeneratorOptions(users: 40, seed: 5))
        let database = try TestPostgres.makeDatabase()
        let store = Store(connection: try database.connect())
        try importJSON(generated.json, into: store)
        let sql = try database.connect()
        let user = try sql.query("SELECT uid FROM users ORDER BY uid COLLATE \"C\" LIMIT 1")[0].decode(String.self, at: 0)
        try sql.execute("UPDATE users SET username = 'renamed' WHERE uid = \(user)")
        // One follow of a user who has others, so that the user's node stays.
        let follow = try sql.query("""
            SELECT uid, min(followee_uid COLLATE "C") FROM following GROUP BY uid HAVING count(*) > 1 ORDER BY 1 LIMIT 1
            """)[0]
        let (follower, followee) = (try follow.decode(String.self, at: 0), try follow.decode(String.self, at: 1))
        try sql.execute("DELETE FROM following WHERE uid = \(follower) AND followee_uid = \(followee)")
        // A value no table types lands in unmapped_values.
        try store.write(.set(json: "7"), at: ["zzz", "added"])
        let differences = try verified(store, against: generated.json)
        #expect(differences == [
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
        #expect(differences == [
            "/posts/\(post)/\(key)/image_height changed", "/users/\(uid) extra", "/users/zz-new-user missing",
        ])
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
        try store.write(.remove, at: [first])
        #expect(try verified(store, against: canonical) == ["/\(first) missing"])
    }
}
