import Foundation
import PostgresClient
import PostgresTestSupport
import Testing

@testable import Storage

/// One kind of damage to the consistent tree, and what `check` must say about it.
struct Injection: CustomTestStringConvertible, Sendable {
    var name: String
    var damage: @Sendable (TreeValue) -> TreeValue
    /// The checks that must fail, with their examples; every other check must pass.
    var expected: [IntegrityCheck: [String]]
    /// Whether `check --fix` restores the consistent tree exactly (otherwise it only leaves `check` clean).
    var restoresTree = true

    var testDescription: String { name }
}

let injections: [Injection] = [
    Injection(
        name: "like counts",
        damage: {
            $0.setting("posts/bob/-Pb2/like_count", "3").removing("posts/alice/-Pa1/like_count")
        }, expected: [.likeCount: ["/posts/alice/-Pa1", "/posts/bob/-Pb2"]]),
    Injection(
        name: "a like that is not true counts",
        damage: {
            $0.setting("postLikes/-Pb2/carol", "1")
        }, expected: [.likeCount: ["/posts/bob/-Pb2"]], restoresTree: false),
    Injection(
        name: "posters",
        damage: {
            $0.setting("posts/bob/-Pb1/poster/username", "\"robert\"").removing("posts/alice/-Pa1/poster")
        }, expected: [.poster: ["/posts/alice/-Pa1", "/posts/bob/-Pb1"]]),
    Injection(
        name: "a renamed user",
        damage: {
            $0.setting("users/bob/username", "\"robert\"")
        }, expected: [.poster: ["/posts/bob/-Pb1", "/posts/bob/-Pb2"]], restoresTree: false),
    Injection(
        name: "a missing timeline entry",
        damage: {
            $0.removing("timeline/carol/-Pb2")
        }, expected: [.timelineMissing: ["/timeline/carol/-Pb2"]]),
    Injection(
        name: "a timeline entry that is not an object",
        damage: {
            $0.setting("timeline/carol/-Pb2", "true")
        }, expected: [.timelineExtra: ["/timeline/carol/-Pb2"]]),
    Injection(
        name: "a follow kept as an unmapped value",
        damage: {
            // Not `true`, so stored as an unmapped value: it is still a follow, and carol's entries of bob's posts
            // belong in her timeline.
            $0.setting("following/carol/bob", #"{"since": 1500000000}"#)
        }, expected: [:], restoresTree: false),
    Injection(
        name: "timeline entries that do not belong",
        damage: {
            $0.setting("timeline/bob/-Pa1", #"{"poster_uid": "alice"}"#)
                .setting("timeline/alice/-Pb1/poster_uid", "\"carol\"")
                .setting("timeline/dave/-Pb1", #"{"poster_uid": "bob"}"#)
        }, expected: [.timelineExtra: ["/timeline/alice/-Pb1", "/timeline/bob/-Pa1", "/timeline/dave/-Pb1"]]),
    Injection(
        name: "a half-written unfollow",
        damage: {
            $0.removing("followers/bob/alice")
        }, expected: [.followAsymmetric: ["/following/alice/bob"]]),
    Injection(
        name: "a half-written follow",
        damage: {
            $0.setting("followers/carol/bob", "true")
        }, expected: [.followAsymmetric: ["/followers/carol/bob"]], restoresTree: false),
    Injection(
        name: "chat copies that disagree",
        damage: {
            $0.setting("chats/bob/-Ch1/title", "\"Bob's chat\"")
        }, expected: [.chatCopies: ["/chats/alice/-Ch1"]]),
    Injection(
        name: "a missing chat copy",
        damage: {
            $0.removing("chats/bob/-Ch1")
        }, expected: [.chatCopies: ["/chats/alice/-Ch1"]]),
    Injection(
        name: "copies with different member hashes",
        damage: {
            $0.setting("chats/bob/-Ch1/memberHash", "\"-42\"")
        }, expected: [.chatMemberHash: ["/chats/alice/-Ch1"], .chatHashLegacy: ["/chats/alice/-Ch1"]]),
    Injection(
        name: "legacy member hashes",
        damage: {
            $0.setting("chats/bob/-Ch1/memberHash", "\"-42\"").setting("chats/alice/-Ch1/memberHash", "\"-42\"")
        }, expected: [.chatHashLegacy: ["/chats/alice/-Ch1"]]),
    Injection(
        name: "a duplicate chat",
        damage: {
            let copy = #"{"title": "alice, bob", "memberHash": "1", "members": {"alice": true, "bob": true}}"#
            return $0.setting("chats/alice/-Ch2", copy).setting("chats/bob/-Ch2", copy)
        }, expected: [.chatDuplicates: ["/chats/alice/-Ch2"], .chatHashLegacy: ["/chats/alice/-Ch2"]],
        restoresTree: false),
    Injection(
        name: "a message the copies do not show",
        damage: {
            $0.setting(
                "messages/-Ch1/-M3",
                #"{"content": "bye", "timestamp": 1500000030, "sender": {"uid": "alice", "username": "alice"}}"#)
        }, expected: [.chatLastMessage: ["/chats/alice/-Ch1"]], restoresTree: false),
    Injection(
        name: "orphans",
        damage: {
            $0.setting("postLikes/-Gone/alice", "true")
                .setting("messages/-NoChat/-M1", #"{"content": "x", "timestamp": 1}"#)
                .setting("timeline/alice/-Gone", #"{"poster_uid": "bob"}"#)
        }, expected: [.orphans: ["/messages/-NoChat/-M1", "/postLikes/-Gone/alice", "/timeline/alice/-Gone"]]),
]

@Suite("Integrity checks and repairs")
struct IntegrityCheckTests {
    @Test func aConsistentTreeIsClean() throws {
        let store = try makeStore()
        try importJSON(consistentTree.json, into: store)
        let results = try store.check()
        #expect(results.map(\.check) == IntegrityCheck.allCases)
        for result in results {
            #expect(result.isClean, "\(result.check.rawValue): \(result.examples)")
        }
    }

    /// A distributed store reads twins of some checks' views (migrations 0012 and 0014): on one server each must
    /// list its view's rows, as many times, for every injection and for a generated tree with planted anomalies.
    @Test func theChecksTwinsListTheirViewsRows() throws {
        let trees =
            injections.map { $0.damage(consistentTree).json } + damagedTimelines.map(\.1.json)
            + [try generate(GeneratorOptions(users: 300, seed: 23, plantsAnomalies: true)).json]
        let twinned = IntegrityCheck.allCases.filter { $0.viewName(isDistributed: true) != $0.viewName }
        #expect(twinned == [.timelineMissing, .timelineExtra, .orphans])
        var violations = 0
        for tree in trees {
            let store = try makeStore()
            try importJSON(tree, into: store)
            for check in twinned {
                func paths(_ view: String) throws -> [String] {
                    try store.connection.query("SELECT path FROM \(identifier: view) ORDER BY path").map {
                        try $0.decode(String.self, at: 0)
                    }
                }
                let want = try paths(check.viewName)
                #expect(try paths(check.viewName(isDistributed: true)) == want, "\(check.rawValue)")
                violations += want.count
            }
        }
        #expect(violations > 20, "the trees hold violations to compare")
    }

    @Test(arguments: injections)
    func eachViolationIsFoundExactlyAndFixed(_ injection: Injection) throws {
        let store = try makeStore()
        try importJSON(injection.damage(consistentTree).json, into: store)
        let results = try store.check(examples: 10)
        for result in results {
            let expected = injection.expected[result.check] ?? []
            #expect(result.violations == expected.count, "\(result.check.rawValue): \(result.examples)")
            #expect(result.examples == expected, "\(result.check.rawValue)")
        }

        let fixable = injection.expected.keys.filter { $0.repair != nil }
        let fixed = try store.checkAndFix()
        #expect(Set(fixed.repairs.map(\.repair)) == Set(fixable.map { $0.repair! }))
        for result in fixed.after {
            let remaining = result.check.repair == nil ? injection.expected[result.check] ?? [] : []
            #expect(result.examples == remaining, "\(result.check.rawValue) after --fix")
        }
        #expect(
            try store.check().filter { !$0.isClean }.map(\.check) == fixed.after.filter { !$0.isClean }.map(\.check))
        if injection.restoresTree {
            let consistent = try makeStore()
            try importJSON(consistentTree.json, into: consistent)
            expectSameText(try exportJSON(store), try exportJSON(consistent))
        }
        // Idempotent: nothing is left to change.
        for repair in Repair.fixOrder {
            #expect(try store.repair(repair).rowsChanged == 0, "\(repair)")
        }
    }

    @Test func aDryRunFixReportsTheRepairsAndChangesNothing() throws {
        let store = try makeStore()
        let damaged = consistentTree.setting("posts/bob/-Pb2/like_count", "3").removing("timeline/carol/-Pb2")
        try importJSON(damaged.json, into: store)
        let before = try exportJSON(store)
        let fixed = try store.checkAndFix(isDryRun: true)
        #expect(fixed.repairs.map(\.repair) == [.likeCounts, .timelines])
        #expect(fixed.repairs.allSatisfy { $0.isDryRun })
        #expect(fixed.repairs.map(\.rowsChanged) == [1, 1])
        #expect(fixed.after.allSatisfy { $0.isClean })
        expectSameText(try exportJSON(store), before)
        #expect(try store.repair(.likeCounts, options: RepairOptions(isDryRun: true)).rowsChanged == 1)
        let likeCounts = try store.check([.likeCount])[0]
        #expect(likeCounts.violations == 1)
    }

    @Test func followRepairsPreferOneSide() throws {
        let damaged = consistentTree.removing("followers/bob/alice").setting("followers/carol/bob", "true")
        for (preference, following, followers) in [
            (
                FollowPreference.union, ["alice": ["bob"], "bob": ["carol"], "carol": ["alice", "bob"]],
                ["alice": ["carol"], "bob": ["alice", "carol"], "carol": ["bob"]]
            ),
            (
                .following, ["alice": ["bob"], "carol": ["alice", "bob"]],
                ["alice": ["carol"], "bob": ["alice", "carol"]]
            ),
            (
                .followers, ["carol": ["alice", "bob"], "bob": ["carol"]],
                ["alice": ["carol"], "bob": ["carol"], "carol": ["bob"]]
            ),
        ] {
            let store = try makeStore()
            try importJSON(damaged.json, into: store)
            _ = try store.repair(.follows, options: RepairOptions(followPreference: preference))
            let followingEdges = try edges(store, "SELECT uid, followee_uid FROM following")
            let followerEdges = try edges(store, "SELECT uid, follower_uid FROM followers")
            #expect(followingEdges == following, "\(preference)")
            #expect(followerEdges == followers, "\(preference)")
            let asymmetric = try store.check([.followAsymmetric])[0]
            #expect(asymmetric.isClean)
        }
    }

    @Test func timelineBackfillOfOneUserLeavesTheOthers() throws {
        let store = try makeStore()
        try importJSON(consistentTree.removing("timeline/carol").removing("timeline/bob/-Pb1").json, into: store)
        let report = try store.repair(.timelines, options: RepairOptions(user: "carol"))
        #expect(report.changes.first { $0.action == .inserted }?.rows == 3)
        let missing = try store.check([.timelineMissing])[0]
        #expect(missing.examples == ["/timeline/bob/-Pb1"])
    }

    @Test func aSecondMaintenanceRunFailsAtOnceInsteadOfWaiting() throws {
        let database = try TestPostgres.makeDatabase()
        let first = Store(connection: try database.connect())
        let second = Store(connection: try database.connect())
        try first.connection.withTransaction {
            try first.maintenance.take()
            #expect {
                try second.check()
            } throws: { error in
                (error as? StorageError)?.sqlState == .lockNotAvailable
            }
        }
        #expect(try second.check().allSatisfy { $0.isClean })
    }

    @Test func checkRunsWithARoleThatMayOnlySelect() throws {
        let database = try TestPostgres.makeDatabase()
        let owner = try database.connect()
        try importJSON(consistentTree.setting("posts/bob/-Pb2/like_count", "3").json, into: Store(connection: owner))
        let role = "reader_" + database.name
        try owner.execute("CREATE ROLE \(identifier: role)")
        try owner.execute("GRANT SELECT ON ALL TABLES IN SCHEMA public TO \(identifier: role)")
        defer {
            _ = try? owner.execute("DROP OWNED BY \(identifier: role)");
            _ = try? owner.execute("DROP ROLE \(identifier: role)")
        }
        // The test cluster authenticates by peer, so the reader is a session that took on the role.
        let reader = Store(connection: try database.connect())
        try reader.connection.execute("SET ROLE \(identifier: role)")
        let results = try reader.check()
        #expect(results.filter { !$0.isClean }.map(\.check) == [.likeCount])
        #expect(throws: StorageError.self) { try reader.repair(.likeCounts) }
    }

    private func edges(_ store: Store, _ select: Query) throws -> [String: [String]] {
        var result: [String: [String]] = [:]
        for row in try store.connection.query(select + " ORDER BY 1, 2") {
            result[try row.decode(String.self, at: 0), default: []].append(try row.decode(String.self, at: 1))
        }
        return result
    }
}
