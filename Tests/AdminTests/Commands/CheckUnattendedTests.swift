import Foundation
import PostgresClient
import PostgresTestSupport
import Storage
import Synchronization
import Testing

/// Alice follows bob, but /followers misses it; bob's post -P1 counts a like too many and has an orphan like;
/// his post -P2 is right.
let damagedTreeWithACleanPost = """
    {"users": {"alice": {"username": "alice"}, "bob": {"username": "bob"}},
     "following": {"alice": {"bob": true}},
     "posts": {"bob": {"-P1": {"image_url": "u", "like_count": 2, "poster": {"uid": "bob", "username": "bob"}},
                       "-P2": {"image_url": "v", "like_count": 0, "poster": {"uid": "bob", "username": "bob"}}}},
     "postLikes": {"-P1": {"alice": true}, "-Gone": {"bob": true}},
     "timeline": {"alice": {"-P1": {"poster_uid": "bob"}, "-P2": {"poster_uid": "bob"}},
                  "bob": {"-P1": {"poster_uid": "bob"}, "-P2": {"poster_uid": "bob"}}}}
    """

@Suite("check unattended: history, thresholds, metrics, waiting")
struct ScheduledCheckTests {
    private func damagedDatabase() throws -> TestDatabase {
        try databaseHolding(damagedTreeWithACleanPost)
    }

    private func admin(_ database: TestDatabase, _ arguments: String...) throws -> AdminRun {
        try AdminProcess.run(["--db", database.conninfo] + arguments)
    }

    @Test func recordedRunsMetricsAndHistory() throws {
        let database = try damagedDatabase()
        let directory = try makeTemporaryDirectory("admin-metrics")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let metrics = directory + "/admin_check.prom"

        let first = try admin(database, "check", "--record", "--metrics-file", metrics, "--format", "json")
        #expect(first.status == 3, "\(first.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(first.stdout.utf8)) as? [String: Any])
        let checks = try #require(report["checks"] as? [[String: Any]])
        let values = try samples(in: metrics)
        #expect(values["admin_check_up"] == 1)
        #expect(values["admin_check_exit_status"] == 3)
        #expect(checks.count == IntegrityCheck.allCases.count)
        for check in checks {
            let name = try #require(check["name"] as? String)
            #expect(values["admin_check_violations{check=\"\(name)\"}"] == (check["violations"] as? Double), "\(name)")
            // Foundation's JSON parser may round the last digit.
            let seconds = try #require(check["seconds"] as? Double)
            #expect(
                abs(values["admin_check_duration_seconds{check=\"\(name)\"}"].map { $0 - seconds } ?? 1) < 1e-12,
                "\(name)")
            #expect(values["admin_check_tripped{check=\"\(name)\"}"] == ((check["tripped"] as? Bool) == true ? 1 : 0))
        }
        let mode = try FileManager.default.attributesOfItem(atPath: metrics)[.posixPermissions] as? Int
        #expect(mode == 0o644, "the collector runs as another user")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == ["admin_check.prom"])

        #expect(try admin(database, "check", "--fix", "--yes", "-q").status == 0)
        let second = try admin(database, "check", "--record", "--metrics-file", metrics)
        #expect(second.status == 0, "\(second.stderr)")
        #expect(try samples(in: metrics)["admin_check_violations{check=\"like_count\"}"] == 0)

        let history = try admin(database, "check", "--history", "--format", "json")
        #expect(history.status == 0, "\(history.stderr)")
        let listed = try #require(try JSONSerialization.jsonObject(with: Data(history.stdout.utf8)) as? [String: Any])
        let runs = try #require(listed["runs"] as? [[String: Any]])
        #expect(runs.map { $0["exit_status"] as? Int } == [0, 3])
        #expect(runs.map { $0["outcome"] as? String } == ["passed", "violations"])
        #expect(runs.allSatisfy { ($0["role"] as? String)?.isEmpty == false && $0["version"] as? String == "0.1.0" })
        func entry(_ run: [String: Any], _ name: String) -> [String: Any]? {
            (run["checks"] as? [[String: Any]])?.first { $0["name"] as? String == name }
        }
        #expect(entry(runs[0], "like_count")?["violations"] as? Int == 0)
        #expect(entry(runs[0], "like_count")?["change"] as? Int == -1)
        #expect(entry(runs[1], "like_count")?["tripped"] as? Bool == true)
        #expect(entry(runs[1], "like_count")?["change"] is NSNull, "the first run has nothing to change from")

        let table = try admin(database, "check", "--history", "--only", "like_count,orphans")
        #expect(table.stdout.contains("| 0 (-1)     | 0 (-1)\n"), "\(table.stdout)")
        #expect(table.stdout.contains("| 1 !        | 1 !\n"), "\(table.stdout)")
        let csv = try admin(database, "check", "--history", "--only", "like_count", "--format", "csv", "--limit", "1")
        #expect(csv.stdout.hasPrefix("started,seconds,exit,outcome,role,client,version,like_count,like_count_change\n"))
        #expect(csv.stdout.hasSuffix(",0,-1\n"), "\(csv.stdout)")
    }

    @Test func anUnreachableServerExitsTwoAndSaysDown() throws {
        let directory = try makeTemporaryDirectory("admin-metrics")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let metrics = directory + "/admin_check.prom"
        let run = try AdminProcess.run(
            ["--db", "host=\(directory) port=1 connect_timeout=2", "check", "--record", "--metrics-file", metrics])
        #expect(run.status == 2, "\(run.stderr)")
        let values = try samples(in: metrics)
        #expect(values["admin_check_up"] == 0)
        #expect(values["admin_check_exit_status"] == 2)
        #expect(
            values.keys.allSatisfy { !$0.hasPrefix("admin_check_violations") }, "no counts from a run that did not run")
        for label in ["9x=1", "check=a", "x", "a-b=1"] {
            let refused = try AdminProcess.run(["check", "--metrics-file", metrics, "--metrics-label", label])
            #expect(refused.status == 64 && refused.stderr.contains("--metrics-label takes NAME=VALUE"), "\(label)")
        }
        let twice = try AdminProcess.run(
            ["check", "--metrics-file", metrics, "--metrics-label", "env=a", "--metrics-label", "env=b"])
        #expect(twice.status == 64 && twice.stderr.contains("--metrics-label env is given twice"), "\(twice.stderr)")
    }

    @Test func aRunIsRecordedOnceWhenItsMetricsFileCannotBeWritten() throws {
        let database = try damagedDatabase()
        let run = try admin(database, "check", "-q", "--record", "--metrics-file", "/nonexistent-dir/admin.prom")
        #expect(run.status == 1)
        #expect(run.stderr.contains("the directory /nonexistent-dir does not exist"), "\(run.stderr)")
        #expect(
            run.stderr.components(separatedBy: "/nonexistent-dir does not exist").count == 2, "said once: \(run.stderr)"
        )
        let history = try admin(database, "check", "--history", "--format", "csv", "--only", "orphans")
        #expect(history.stdout.split(separator: "\n").count == 2, "one run, as it ended: \(history.stdout)")
        #expect(history.stdout.contains(",3,violations,"), "\(history.stdout)")
    }

    /// A check_runs row the console did not write (edited by hand, another tool) is reported and skipped, not a
    /// SQL error that stops the history or the nightly `--fail-on new`.
    @Test func oddHistoryRowsAreReportedAndSkipped() throws {
        let database = try damagedDatabase()
        #expect(try admin(database, "check", "-q", "--record", "--only", "orphans").status == 3)
        try database.connect().execute(
            script: """
                INSERT INTO check_runs (run_id, started_at, finished_at, run_by, client, console_version, exit_status,
                    outcome, checks)
                VALUES (gen_random_uuid(), now(), now(), 'x', 'x', 'x', 0, 'passed',
                    '[{"check": "orphans", "violations": "many", "seconds": 0, "tripped": false}, 7,
                      {"check": "orphans", "violations": 1e300, "seconds": 1e400, "tripped": "no"},
                      {"check": "follows", "violations": 2, "seconds": 0.5, "tripped": true}]');
                """)
        let history = try admin(database, "check", "--history", "--format", "csv")
        #expect(history.status == 0, "\(history.stderr)")
        #expect(history.stderr.contains("holds 3 entries the console did not write; skipped"), "\(history.stderr)")
        #expect(history.stdout.split(separator: "\n").count == 3, "\(history.stdout)")
        let nightly = try admin(database, "check", "-q", "--only", "orphans", "--fail-on", "new")
        #expect(nightly.status == 0, "the earlier run's 3 orphans are not new: \(nightly.stderr)")
        #expect(!nightly.stderr.contains("SQLSTATE"), "\(nightly.stderr)")
    }

    @Test func failOnNewHearsOnlyOfRises() throws {
        let database = try damagedDatabase()
        #expect(try admin(database, "check", "--record", "-q").status == 3)
        // Counts fell (the orphan is gone), none rose: nothing new.
        #expect(try admin(database, "repair", "orphans", "-q").status == 0)
        let fell = try admin(database, "check", "--fail-on", "new")
        #expect(fell.status == 0, "\(fell.stdout)\(fell.stderr)")
        #expect(fell.stdout.contains(" like_count        |          1 | known (was 1) |"), "\(fell.stdout)")

        // -P2's like_count goes wrong too: like_count's violations go from 1 to 2.
        #expect(try admin(database, "set", "/posts/bob/-P2/like_count", "7", "-q").status == 0)
        let rose = try admin(database, "check", "--fail-on", "new")
        #expect(rose.status == 3)
        #expect(rose.stdout.contains(" like_count        |          2 | tripped: rose from 1 |"), "\(rose.stdout)")
        #expect(
            rose.stderr
                == "admin: check: 1 of \(IntegrityCheck.allCases.count) checks found 2 violations: like_count (rose from 1)\n"
        )
    }

    /// The first cron run of `--fail-on new --record` has nothing to compare with: its counts are the baseline,
    /// nothing trips and `--quiet` prints nothing; unrecorded, every violation is new.
    @Test func aFirstRecordedRunIsTheBaseline() throws {
        let database = try damagedDatabase()
        let unrecorded = try admin(database, "check", "--fail-on", "new")
        #expect(unrecorded.status == 3, "\(unrecorded.stdout)")
        #expect(unrecorded.stderr.contains("every violation counts as new (--record keeps a baseline)"))
        let first = try admin(database, "check", "--fail-on", "new", "--record", "--quiet")
        #expect(first.status == 0, "\(first.stdout)\(first.stderr)")
        #expect(first.stdout.isEmpty && first.stderr.isEmpty, "\(first.stdout)\(first.stderr)")
        let shown = try admin(database, "check", "--fail-on", "new", "--only", "like_count", "--format", "json")
        #expect(shown.status == 0 && shown.stdout.contains(#""status": "known (was 1)""#), "\(shown.stdout)")
        let history = try admin(database, "check", "--history", "--format", "json")
        #expect(history.stdout.contains(#""exit_status": 0"#), "\(history.stdout)")
        // Later runs are held to it.
        #expect(try admin(database, "set", "/posts/bob/-P2/like_count", "7", "-q").status == 0)
        #expect(try admin(database, "check", "--fail-on", "new", "--record", "-q").status == 3)
    }

    @Test func allowLetsUpToNPass() throws {
        let database = try damagedDatabase()
        let atN = try admin(database, "check", "--only", "like_count", "--allow", "like_count=1", "--format", "json")
        #expect(atN.status == 0, "\(atN.stderr)")
        #expect(atN.stdout.contains(#""ok": true"#) && atN.stdout.contains(#""status": "allowed (--allow 1)""#))

        // -P2's like_count goes wrong too: like_count's violations go from 1 to 2.
        #expect(try admin(database, "set", "/posts/bob/-P2/like_count", "7", "-q").status == 0)
        let overN = try admin(database, "check", "--only", "like_count", "--allow", "like_count=1")
        #expect(overN.status == 3)
        #expect(overN.stderr.contains("like_count (over --allow 1)"), "\(overN.stderr)")

        let malformed = try admin(database, "check", "--allow", "like_count")
        #expect(malformed.status == 64 && malformed.stderr.contains("--allow takes CHECK=N"), "\(malformed.stderr)")
        let unknown = try admin(database, "check", "--allow", "likes=3")
        #expect(unknown.status == 64 && unknown.stderr.contains("no check named \"likes\""), "\(unknown.stderr)")
    }

    @Test func aSelectOnlyRoleChecksAndRecordsWithInsertOnTheHistoryAlone() throws {
        let database = try damagedDatabase()
        let role = "reader_" + UUID().uuidString.prefix(8).lowercased()
        let owner = try database.connect()
        try owner.execute("CREATE ROLE \(identifier: role) LOGIN")
        try owner.execute("GRANT SELECT ON ALL TABLES IN SCHEMA public TO \(identifier: role)")
        // As the README grants it (used on Citus only; a migrated store has the function everywhere).
        try owner.execute("GRANT EXECUTE ON FUNCTION hold_distributed_commits() TO \(identifier: role)")
        // The test cluster authenticates by peer, so the role is taken on after connecting, as SET ROLE does.
        let asReader = ["--db", database.conninfo + " options='-c role=\(role)'"]
        let check = try AdminProcess.run(asReader + ["check", "-q"])
        #expect(check.status == 3, "\(check.stderr)")
        let refused = try AdminProcess.run(asReader + ["check", "--record", "-q"])
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("permission denied for table check_runs"), "\(refused.stderr)")

        #expect(refused.stderr.contains("the failed run could not be recorded"), "\(refused.stderr)")

        // INSERT on check_runs is all that recording needs; a check that fails half-way is recorded as failed.
        try owner.execute("GRANT INSERT ON check_runs TO \(identifier: role)")
        try owner.execute("REVOKE SELECT ON integrity_orphans FROM \(identifier: role)")
        let halfWay = try AdminProcess.run(asReader + ["check", "--record", "-q"])
        #expect(halfWay.status == 1)
        #expect(halfWay.stderr.contains("permission denied for view integrity_orphans"), "\(halfWay.stderr)")
        try owner.execute("GRANT SELECT ON integrity_orphans TO \(identifier: role)")
        let recorded = try AdminProcess.run(asReader + ["check", "--record", "-q"])
        #expect(recorded.status == 3, "\(recorded.stderr)")

        let history = try admin(database, "check", "--history", "--format", "csv", "--only", "like_count")
        let lines = history.stdout.split(separator: "\n")
        #expect(lines.count == 3, "the failed run, then the recorded one: \(history.stdout)")
        #expect(lines.dropFirst().allSatisfy { $0.contains(",\(role),") })
        #expect(lines[1].contains(",3,violations,") && lines[1].hasSuffix(",1,0"), "\(lines[1])")
        #expect(lines[2].contains(",1,failed: ") && lines[2].contains("permission denied for view integrity_orphans"))
        #expect(lines[2].hasSuffix(",1,"), "like_count ran before the check that failed: \(lines[2])")
    }

    /// Ctrl-C while a recorded check waits for the maintenance lock: the run is recorded as failed (the cancel
    /// requests Ctrl-C sends until the command has ended leave the recording alone) and the console exits 1.
    @Test func aRecordedCheckStoppedByCtrlCIsRecordedAsFailed() throws {
        let database = try damagedDatabase()
        let holder = try database.connect()
        try holder.execute("SELECT pg_advisory_lock(\(Int64(0x66_6261_646D_696E)))")
        let directory = try makeTemporaryDirectory("admin-check-cancel")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let command = [AdminProcess.executable.path, "--db", database.conninfo, "check", "--record", "--wait", "60"]
        let stopped = try AdminProcess.runShell(
            "exec " + command.map(shellQuoted).joined(separator: " "), input: "",
            environment: ProcessInfo.processInfo.environment, directory: directory, interruptAfter: 1.5)
        #expect(stopped.status == 1, "\(stopped.stderr)")
        #expect(stopped.stderr.contains("canceling statement due to user request"), "\(stopped.stderr)")
        #expect(!stopped.stderr.contains("could not be recorded"), "\(stopped.stderr)")
        let history = try admin(database, "check", "--history", "--format", "csv", "--only", "like_count")
        let lines = history.stdout.split(separator: "\n")
        #expect(lines.count == 2, "\(history.stdout)")
        #expect(lines.last?.contains(",1,failed: canceling statement due to user request") == true, "\(history.stdout)")
    }

    @Test func waitQueuesBehindAnotherMaintenanceRun() throws {
        let database = try damagedDatabase()
        // Used by the releasing thread only once the main one is done with it.
        nonisolated(unsafe) let holder = try database.connect()
        try holder.execute("SELECT pg_advisory_lock(\(Int64(0x66_6261_646D_696E)))")
        let atOnce = try admin(database, "check")
        #expect(atOnce.status == 1)
        #expect(atOnce.stderr.contains("another check or repair is running on this database (pid "), "\(atOnce.stderr)")
        #expect(atOnce.stderr.contains("--wait SECONDS"), "\(atOnce.stderr)")
        let timedOut = try admin(database, "check", "--wait", "0.5")
        #expect(timedOut.status == 1)
        #expect(timedOut.stderr.contains("still held the maintenance lock after 0.5 s"), "\(timedOut.stderr)")

        // Released once the check is seen waiting for it, so that the check has queued, not found it free.
        let sawWaiter = Mutex(false)
        let release = Thread {
            let deadline = Date().addingTimeInterval(30)
            while Date() < deadline {
                let waiting = try? holder.query(
                    """
                    SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
                        AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
                    """)[0].decode(Int.self, at: 0)
                if waiting == 1 {
                    sawWaiter.withLock { $0 = true }
                    break
                }
                Thread.sleep(forTimeInterval: 0.02)
            }
            _ = try? holder.execute("SELECT pg_advisory_unlock_all()")
        }
        release.start()
        let queued = try admin(database, "check", "--wait", "60", "--only", "like_count")
        #expect(sawWaiter.withLock { $0 }, "the check waited for the lock")
        #expect(queued.status == 3, "ran once the lock was free: \(queued.stderr)")
        #expect(queued.stdout.contains(" like_count |          1 |"))
    }
}
