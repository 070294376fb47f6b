import Foundation
import PostgresTestSupport
import Storage
import Testing

/// Alice follows bob, but /followers misses it; bob's post counts a like too many and has an orphan like.
private let damagedTree = """
    {"users": {"alice": {"username": "alice"}, "bob": {"username": "bob"}},
     "following": {"alice": {"bob": true}},
     "posts": {"bob": {"-P1": {"image_url": "u", "like_count": 2, "poster": {"uid": "bob", "username": "bob"}}}},
     "postLikes": {"-P1": {"alice": true}, "-Gone": {"bob": true}},
     "timeline": {"alice": {"-P1": {"poster_uid": "bob"}}, "bob": {"-P1": {"poster_uid": "bob"}}}}
    """

@Suite("check and repair commands")
struct CheckCommandTests {
    private func damagedDatabase() throws -> TestDatabase {
        try databaseHolding(damagedTree)
    }

    @Test func violationsExitWithThreeAndNameTheChecks() throws {
        let database = try damagedDatabase()
        let run = try AdminProcess.run(["--db", database.conninfo, "check"])
        #expect(run.status == 3)
        #expect(run.stdout.contains(" like_count        |          1 | /posts/bob/-P1\n"))
        #expect(run.stdout.contains(" follow_asymmetric |          1 | /following/alice/bob\n"))
        #expect(run.stdout.contains(" poster            |          0 |\n"))
        // Summed up once, by the error line.
        #expect(!run.stdout.contains("checks found violations"))
        #expect(
            run.stderr
                == "admin: check: 3 of \(IntegrityCheck.allCases.count) checks found 3 violations: like_count, "
                + "follow_asymmetric, orphans\n")
    }

    @Test func timelinesInBatches() throws {
        let database = try databaseHolding(
            """
            {"users": {"alice": {"username": "alice"}, "bob": {"username": "bob"}, "carol": {"username": "carol"}},
             "following": {"alice": {"bob": true}, "carol": {"bob": true}},
             "posts": {"bob": {"-P1": {"image_url": "u", "like_count": 0, "poster": {"uid": "bob", "username": "bob"}}}}}
            """)
        let run = try AdminProcess.run(["--db", database.conninfo, "backfill", "timelines", "--batch-size", "1"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains("timeline"))
        #expect(run.stdout.contains("inserted"))
        let check = try AdminProcess.run([
            "--db", database.conninfo, "check", "--only", "timeline_missing,timeline_extra",
        ])
        #expect(check.status == 0, "\(check.stdout)")
        // Every repair but chat merge takes --batch-size; follows are asymmetric here, so one of them changes rows.
        for command in [
            ["backfill", "like-counts"], ["denormalize", "posters"], ["rehash", "chats"], ["repair", "follows"],
            ["repair", "chats"], ["repair", "orphans"],
        ] {
            let batched = try AdminProcess.run(
                ["--db", database.conninfo] + command + ["--batch-size", "1", "--format", "json"])
            #expect(batched.status == 0, "\(command): \(batched.stderr)")
        }
        #expect(try AdminProcess.run(["--db", database.conninfo, "check", "--quiet"]).status == 0)
        let merge = try AdminProcess.run(["--db", database.conninfo, "chat", "merge", "-A", "-B", "--batch-size", "1"])
        #expect(merge.status == 64 && merge.stderr.contains("--batch-size"), "\(merge.stderr)")
        for (arguments, message) in [
            (["--batch-size", "0"], "--batch-size must be 1 or more"),
            (["--batch-size", "2", "--user", "alice"], "--batch-size and --user do not go together"),
        ] {
            let refused = try AdminProcess.run(["--db", database.conninfo, "backfill", "timelines"] + arguments)
            #expect(refused.status == 64)
            #expect(refused.stderr.contains(message), "\(refused.stderr)")
        }
    }

    @Test func theJSONContract() throws {
        let database = try damagedDatabase()
        let run = try AdminProcess.run(
            ["--db", database.conninfo, "check", "--format", "json", "--only", "like_count,orphans,poster"])
        #expect(run.status == 3)
        let report = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
        #expect(report["ok"] as? Bool == false)
        let checks = try #require(report["checks"] as? [[String: Any]])
        #expect(checks.map { $0["name"] as? String } == ["like_count", "poster", "orphans"])
        #expect(checks.map { $0["violations"] as? Int } == [1, 0, 1])
        #expect(checks.map { $0["examples"] as? [String] } == [["/posts/bob/-P1"], [], ["/postLikes/-Gone/bob"]])
    }

    @Test func fixRepairsThenQuietCheckIsSilent() throws {
        let database = try damagedDatabase()
        let dryRun = try AdminProcess.run(["--db", database.conninfo, "check", "--fix", "--dry-run"])
        #expect(dryRun.status == 0, "\(dryRun.stderr)")
        #expect(dryRun.stdout.contains("After repairs (rolled back):"))
        #expect(dryRun.stderr.contains("backfill like-counts: dry run, would change 1 row "))
        #expect(try AdminProcess.run(["--db", database.conninfo, "check", "--quiet"]).status == 3)

        let fix = try AdminProcess.run(["--db", database.conninfo, "check", "--fix", "--format", "json"])
        #expect(fix.status == 0, "\(fix.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(fix.stdout.utf8)) as? [String: Any])
        #expect(report["ok"] as? Bool == true)
        let repairs = try #require(report["repairs"] as? [[String: Any]])
        #expect(
            repairs.map { $0["repair"] as? String } == ["repair orphans", "repair follows", "backfill like-counts"])

        let quiet = try AdminProcess.run(["--db", database.conninfo, "check", "--quiet"])
        #expect(quiet.status == 0)
        #expect(quiet.stdout.isEmpty && quiet.stderr.isEmpty)
    }

    @Test func repairCommandsReportRowsAndDryRunsChangeNothing() throws {
        let database = try damagedDatabase()
        let dryRun = try AdminProcess.run(["--db", database.conninfo, "repair", "orphans", "--dry-run"])
        #expect(dryRun.status == 0, "\(dryRun.stderr)")
        #expect(dryRun.stdout.contains(" orphans |          1 | /postLikes/-Gone/bob\n"))
        #expect(dryRun.stdout.contains(" repair orphans | post_likes      | deleted |    1\n"))
        #expect(dryRun.stderr.contains("rolled back"))

        let repair = try AdminProcess.run(
            [
                "--db", database.conninfo, "-c", "repair follows --prefer following", "-c",
                "backfill like-counts --format json",
            ])
        #expect(repair.status == 0, "\(repair.stderr)")
        #expect(repair.stdout.contains(" repair follows | followers       | inserted |    1\n"))
        #expect(repair.stdout.contains(#"{"repair": "backfill like-counts", "dry_run": false, "rows_changed": 1"#))

        let check = try AdminProcess.run(["--db", database.conninfo, "check", "--quiet", "--format", "csv"])
        #expect(check.status == 3)
        #expect(check.stdout == "check,violations,examples\norphans,1,/postLikes/-Gone/bob\n")
        let usage = try AdminProcess.run(["--db", database.conninfo, "check", "--only", "likes"])
        #expect(usage.status == 64)
        #expect(usage.stderr.contains("no check named \"likes\""))
    }
}
