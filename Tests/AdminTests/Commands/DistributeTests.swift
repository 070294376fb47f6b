import Foundation
import PostgresTestSupport
import Testing
import TreeTestSupport

@Suite("distribute command on plain PostgreSQL")
struct DistributeRefusalCommandTests {
    @Test func distributeIsRefusedWithAHint() throws {
        let database = try TestPostgres.makeDatabase()
        let run = try AdminProcess.run(["--db", database.conninfo, "distribute"])
        #expect(run.status == 1)
        #expect(run.stdout.isEmpty)
        #expect(run.stderr.contains("is not a Citus coordinator: this database has no citus extension"))
        #expect(run.stderr.contains("HINT:  Distributing needs Citus: CREATE EXTENSION citus"))
    }
}

/// The console against a Citus coordinator with two workers: the same script of maintenance commands leaves the
/// same tree as on one server. Skipped, with the reason, where the server binaries have no citus extension.
@Suite(
    "distribute command on a Citus cluster",
    .enabled(if: TestCitus.isAvailable, Comment(rawValue: "Citus: " + (TestCitus.unavailableReason ?? "available"))))
struct DistributeCommandTests {
    /// Repairs and merges that change the generated tree's planted anomalies, each in one console run.
    static let script = """
        repair orphans
        repair follows --prefer following
        repair chats
        chat merge --all --keep newest
        backfill like-counts
        backfill timelines
        denormalize posters
        rehash chats

        """

    /// A generated tree imported on one server and on a Citus coordinator, which then distributes it.
    func makeStores(in directory: String) throws -> (tree: String, single: String, citus: CitusDatabase) {
        let tree = directory + "/tree.json"
        let generated = try AdminProcess.run([
            "generate", tree, "--users", "300", "--seed", "23", "--anomalies",
        ])
        #expect(generated.status == 0, "\(generated.stderr)")
        let single = try TestPostgres.makeDatabase().conninfo
        let citus = try TestCitus.makeDatabase()
        let migrated = try AdminProcess.run(["--db", citus.coordinator, "-q", "migrate"])
        #expect(migrated.status == 0, "\(migrated.stderr)")
        for conninfo in [single, citus.coordinator] {
            let imported = try AdminProcess.run(["--db", conninfo, "-q", "import", tree])
            #expect(imported.status == 0, "\(imported.stderr)")
        }
        return (tree, single, citus)
    }

    @Test func aDistributedStoreTakesTheConsolesRepairsAsOneServerDoes() throws {
        let directory = try makeTemporaryDirectory("admin-distribute")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (tree, single, citus) = try makeStores(in: directory)

        let distributed = try AdminProcess.run(["--db", citus.coordinator, "distribute", "--shard-count", "4"])
        #expect(distributed.status == 0, "\(distributed.stderr)")
        #expect(distributed.stdout.contains(" post_likes      | by post_owner_uid, with users | now"))
        #expect(distributed.stdout.contains(" unmapped_values | reference (on every node)     | now"))
        #expect(distributed.stderr.contains("Distributed 12 tables; 0 already were."))
        let again = try AdminProcess.run(["--db", citus.coordinator, "distribute"])
        #expect(again.status == 0)
        #expect(again.stderr.contains("Every table was already distributed."))
        let status = try AdminProcess.run(["--db", citus.coordinator, "status"])
        #expect(
            status.stdout.contains(
                "coordinator with 2 active workers; distributed in 3 co-location groups; reads of one instant"))
        let onWorker = try AdminProcess.run(["--db", citus.workers[0], "status"])
        #expect(onWorker.status == 1)
        #expect(onWorker.stderr.contains("is a Citus worker; the store is operated through its coordinator"))

        var exports: [String] = []
        for conninfo in [single, citus.coordinator] {
            let repaired = try AdminProcess.run(["--db", conninfo, "-q"], input: Self.script)
            #expect(repaired.status == 0, "\(repaired.stderr)")
            let export = try AdminProcess.run(["--db", conninfo, "export", "-"])
            #expect(export.status == 0, "\(export.stderr)")
            exports.append(export.stdout)
        }
        #expect(exports[0] == exports[1])
        let original = try String(contentsOfFile: tree, encoding: .utf8)
        #expect(exports[0] != original, "the script changed the tree")
    }

    /// The console's other commands (Firebase's writes, users, posts, follows, likes, chats, reads, vacuum, check
    /// history, verify) on a distributed store: the same output and the same tree as on one server. New posts,
    /// chats and messages get random push IDs and the time of the call, so their keys are mapped to one server's
    /// and they are read through paths that hold no time, then removed before the exports are compared.
    @Test func aDistributedStoreAnswersTheConsolesOtherCommandsAsOneServerDoes() throws {
        let directory = try makeTemporaryDirectory("admin-distribute")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (tree, single, citus) = try makeStores(in: directory)
        let distributed = try AdminProcess.run(["--db", citus.coordinator, "-q", "distribute", "--shard-count", "4"])
        #expect(distributed.status == 0, "\(distributed.stderr)")
        let uid = try #require(
            try AdminProcess.run(["--db", single, "users", "--limit", "1", "--format", "json"]).stdout
                .firstMatch(of: /"uid": ?"([^"]+)"/)?.1)
        let writes = """
            user add citus_a ana
            user add citus_b bo
            user rename citus_b bob
            follow citus_a citus_b
            follow citus_b citus_a
            follow citus_b \(uid)
            set /settings/theme '"dark"'
            update /users/citus_a '{"bio": "hi"}'
            push /logs '{"level": 2}'
            remove /logs
            post create citus_a --image-url https://example.com/a.jpg --image-height 320
            chat send --from citus_a --to citus_b "hello there"

            """
        var outputs: [String] = []
        var exports: [String] = []
        var keys: [(post: String, chat: String, message: String)] = []
        for conninfo in [single, citus.coordinator] {
            let wrote = try AdminProcess.run(["--db", conninfo], input: writes)
            #expect(wrote.status == 0, "\(wrote.stderr)")
            let post = try #require(wrote.stdout.firstMatch(of: #//posts/citus_a/(-[A-Za-z0-9_-]{19})/#)?.1)
            let sent = try #require(
                wrote.stdout.firstMatch(of: #//messages/(-[A-Za-z0-9_-]{19})/(-[A-Za-z0-9_-]{19})/#))
            keys.append((String(post), String(sent.1), String(sent.2)))
            let reads = """
                like citus_b \(post)
                like citus_b \(post)
                unlike citus_a \(post)
                get /postLikes/\(post)
                get /posts/citus_a/\(post)/like_count
                get /timeline/citus_b --shallow
                get /chats/citus_b/\(sent.1)/lastMessage
                get /messages/\(sent.1)/\(sent.2)/text
                users --limit 5
                user show citus_b
                posts \(uid) --limit 3
                timeline \(uid) --limit 3
                chats \(uid) --limit 3
                feed recent --limit 3
                get /users --order-by-key --limit-to-first 4
                unfollow citus_b citus_a
                post delete citus_a \(post)
                remove /chats/citus_a/\(sent.1)
                remove /chats/citus_b/\(sent.1)
                remove /messages/\(sent.1)
                check --only like_count,timeline_missing,timeline_extra,follow_asymmetric --record
                check --history

                """
            let read = try AdminProcess.run(["--db", conninfo, "--format", "json"], input: reads)
            // check exits 3 on the tree's planted anomalies; that is the same on both.
            #expect(read.status == 3, "\(read.stderr)")
            outputs.append(read.stdout)
            let vacuumed = try AdminProcess.run(["--db", conninfo, "-q", "vacuum"])
            #expect(vacuumed.status == 0, "\(vacuumed.stderr)")
            let export = try AdminProcess.run(["--db", conninfo, "export", "-"])
            #expect(export.status == 0, "\(export.stderr)")
            exports.append(export.stdout)
        }
        let sameKeys = outputs[1]
            .replacingOccurrences(of: keys[1].post, with: keys[0].post)
            .replacingOccurrences(of: keys[1].chat, with: keys[0].chat)
            .replacingOccurrences(of: keys[1].message, with: keys[0].message)
        // Check history holds each run's id and times; the rest must agree.
        let withoutTimes = { (text: String) in
            text.replacing(/"(run_id|started_at|finished_at|seconds)": ?[^,}]+/, with: { "\"\($0.1)\": _" })
        }
        let (got, expected) = (withoutTimes(sameKeys), withoutTimes(outputs[0]))
        #expect(got.utf8.elementsEqual(expected.utf8), Comment(rawValue: firstDifference(got, expected)))
        #expect(outputs[0].contains("\"like_count\""), "the reads ran: \(outputs[0].prefix(300))")
        #expect(exports[0] == exports[1], "\(firstDifference(exports[1], exports[0]))")
        let verified = try AdminProcess.run(["--db", citus.coordinator, "verify", tree])
        #expect(verified.status == 3, "the writes changed the tree: \(verified.stderr)")
        #expect(verified.stdout.contains("/users/citus_a"))
    }
}
