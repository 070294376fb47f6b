import Foundation
import PostgresTestSupport
import Testing

private let tree = #"{"users": {"alice": {"username": "alice"}, "bob": {"username": "bob"}}, "zz": [1, 2]}"#
private let newer = #"{"users": {"alice": {"username": "Alice"}, "carol": {"username": "carol"}}, "zz": [1, 2]}"#

@Suite("sync command")
struct SyncCommandTests {
    @Test func syncsReportsAndRunsAgainWithNothingToDo() throws {
        let database = try TestPostgres.makeDatabase()
        let db = ["--db", database.conninfo]
        #expect(try AdminProcess.run(db + ["-q", "import", "-"], input: tree).status == 0)

        let dry = try AdminProcess.run(db + ["sync", "-", "--dry-run"], input: newer)
        #expect(dry.status == 0, "\(dry.stderr)")
        #expect(
            dry.stdout.contains(#" /users/alice/username | changed | "Alice" "#), "\(dry.stdout)")
        #expect(dry.stdout.contains(" /users/bob            | extra   |"), "\(dry.stdout)")
        #expect(
            dry.stdout.contains(" users | 1 | 1 | 1 | 0 | 2 | 2".replacingOccurrences(of: " | ", with: "")) == false)
        #expect(dry.stderr.contains("Dry run: would sync the store with -: 3 differences"), "\(dry.stderr)")
        #expect(dry.stderr.contains("Rolled back; nothing was changed."))
        #expect(try AdminProcess.run(db + ["-q", "verify", "-"], input: tree).status == 0)

        let synced = try AdminProcess.run(db + ["sync", "-"], input: newer)
        #expect(synced.status == 0, "\(synced.stderr)")
        let row = synced.stdout.split(separator: "\n").first { $0.hasPrefix(" users ") }.map {
            $0.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
        }
        // alice rewritten (one row out, one in), carol in, bob out.
        #expect(row == ["users", "1", "1", "1", "0", "2", "2"], "\(synced.stdout)")
        #expect(synced.stderr.contains("Synced the store with -: 3 differences, 3 nodes rewritten or removed"))
        #expect(try AdminProcess.run(db + ["-q", "verify", "-"], input: newer).status == 0)

        let again = try AdminProcess.run(db + ["sync", "-", "--format", "json"], input: newer)
        #expect(again.status == 0, "\(again.stderr)")
        let document = try #require(try JSONSerialization.jsonObject(with: Data(again.stdout.utf8)) as? [String: Any])
        #expect(document["dry_run"] as? Bool == false)
        #expect((document["nodes"] as? [Any])?.isEmpty == true)
        let summary = try #require(document["summary"] as? [String: Any])
        #expect(summary["nodes_rewritten"] as? Int == 0 && summary["rows_written"] as? Int == 0)
    }

    @Test func rejectsAbortUnlessAllowedAndGoToTheRejectsFile() throws {
        let database = try TestPostgres.makeDatabase()
        let db = ["--db", database.conninfo]
        #expect(try AdminProcess.run(db + ["-q", "import", "-"], input: tree).status == 0)
        let directory = try makeTemporaryDirectory("admin-sync")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = directory + "/newer.json"
        try Data(newer.replacingOccurrences(of: #""zz""#, with: #""a$b": 1, "zz""#).utf8).write(
            to: URL(fileURLWithPath: file))

        let refused = try AdminProcess.run(db + ["sync", file], directory: directory)
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("rejected /a$b"), "\(refused.stderr)")
        #expect(try AdminProcess.run(db + ["-q", "verify", "-"], input: tree).status == 0)

        let allowed = try AdminProcess.run(db + ["sync", file, "--max-rejects", "1"], directory: directory)
        #expect(allowed.status == 0, "\(allowed.stderr)")
        let rejects = try String(contentsOfFile: directory + "/newer.json.rejects.jsonl", encoding: .utf8)
        #expect(rejects.contains(#""path": "/a$b""#), "\(rejects)")
        #expect(try AdminProcess.run(db + ["-q", "verify", "-"], input: newer).status == 0)
    }

    /// The cut-over recipe run twice the same day: each sync replaces its default rejects file, verify accepts
    /// the rejected values the sync let through with the same --max-rejects, and -q leaves stdout to data.
    @Test func theRecipeRunsTwiceADayAndVerifyAcceptsWhatSyncLetThrough() throws {
        let database = try TestPostgres.makeDatabase()
        let directory = try makeTemporaryDirectory("admin-recipe")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = directory + "/backup.json"
        try #"{"users": {"u1": {"username": "a", "bad.key": 1}, "u2": {"username": "b"}}}"#
            .write(toFile: file, atomically: true, encoding: .utf8)
        let db = ["--db", database.conninfo]
        for run in 0..<2 {
            // The default rejects file goes in the working directory, named after the file, as import's does.
            let sync = try AdminProcess.run(
                db + ["sync", file, "--yes", "--max-rejects", "100", "-q"], directory: directory)
            #expect(sync.status == 0, "run \(run): \(sync.stderr)")
            #expect(sync.stdout.isEmpty, "\(sync.stdout)")
            #expect(sync.stderr.contains("1 rejected value written to backup.json.rejects.jsonl"), "\(sync.stderr)")
        }
        let rejects = try String(contentsOfFile: file + ".rejects.jsonl", encoding: .utf8)
        #expect(rejects.split(separator: "\n").count == 1 && rejects.contains("/users/u1/bad.key"))
        let strict = try AdminProcess.run(db + ["-q", "verify", file])
        #expect(strict.status == 3, "\(strict.stderr)")
        let accepting = try AdminProcess.run(db + ["verify", file, "--max-rejects", "100"])
        #expect(accepting.status == 0, "\(accepting.stderr)")
        #expect(accepting.stdout.contains("/users/u1/bad.key | rejected"), "\(accepting.stdout)")
        #expect(accepting.stderr.contains("equal but for 1 rejected value (--max-rejects 100)"), "\(accepting.stderr)")
        let json = try AdminProcess.run(db + ["-q", "verify", file, "--max-rejects", "1", "--format", "json"])
        #expect(json.status == 0 && json.stdout.contains(#""equal": false, "accepted": true"#), "\(json.stdout)")
        // A change beside the rejects is still a difference.
        #expect(try AdminProcess.run(db + ["-q", "set", "/users/u2/username", #""c""#]).status == 0)
        #expect(try AdminProcess.run(db + ["-q", "verify", file, "--max-rejects", "100"]).status == 3)
        // A dry run keeps no rejects file and says so in sync's words; an explicit file is never replaced.
        let dry = try AdminProcess.run(db + ["sync", file, "--dry-run", "--max-rejects", "100"], directory: directory)
        #expect(dry.stderr.contains("1 rejected value, not kept (nothing was written):"), "\(dry.stderr)")
        #expect(FileManager.default.fileExists(atPath: file + ".rejects.jsonl"), "a dry run removed the real file")
        let named = directory + "/named.jsonl"
        #expect(
            try AdminProcess.run(db + ["-q", "sync", file, "--yes", "--max-rejects", "9", "--rejects", named]).status
                == 0)
        let again = try AdminProcess.run(db + ["-q", "sync", file, "--yes", "--max-rejects", "9", "--rejects", named])
        #expect(again.status == 1 && again.stderr.contains("exists (from an earlier sync?)"), "\(again.stderr)")
    }

    /// --only and --exclude pick top-level nodes, as pg_restore -t picks tables: the others are left out of the
    /// comparison on both sides, and a sync leaves them as they are, whatever the file holds.
    @Test func onlyAndExcludePickTopLevelNodes() throws {
        let held = #"{"cfg": {"x": 1}, "users": {"a": {"username": "a"}}, "zz": {"k": true}}"#
        let database = try databaseHolding(held)
        let db = ["--db", database.conninfo, "-q"]
        let file = #"{"users": {"a": {"username": "A"}}, "cfg": {"x": 2}, "new": {"y": 1}}"#
        let users = try AdminProcess.run(db + ["verify", "-", "--only", "users", "--format", "json"], input: file)
        #expect(users.status == 3 && users.stdout.contains(#""path": "/users/a/username""#), "\(users.stdout)")
        #expect(users.stdout.contains(#""differences": 1,"#), "\(users.stdout)")
        let none = try AdminProcess.run(
            db + ["verify", "-", "--exclude", "users,cfg", "--exclude", "new,zz"], input: file)
        #expect(none.status == 0, "\(none.stdout)\(none.stderr)")
        let extra = try AdminProcess.run(db + ["verify", "-", "--only", "zz", "--format", "json"], input: file)
        #expect(extra.status == 3 && extra.stdout.contains(#""kind": "extra""#), "\(extra.stdout)")
        let withPath = try AdminProcess.run(db + ["verify", "-", "--only", "users", "--path", "/users"], input: file)
        #expect(withPath.status == 64 && withPath.stderr.contains("not with --path"), "\(withPath.stderr)")

        #expect(try AdminProcess.run(db + ["sync", "-", "--only", "cfg", "--yes"], input: file).status == 0)
        #expect(
            try AdminProcess.run(db + ["export", "-"]).stdout
                == #"{"cfg":{"x":2},"users":{"a":{"username":"a"}},"zz":{"k":true}}"#)
        #expect(try AdminProcess.run(db + ["sync", "-", "--exclude", "zz", "--yes"], input: file).status == 0)
        #expect(
            try AdminProcess.run(db + ["export", "-"]).stdout
                == #"{"cfg":{"x":2},"new":{"y":1},"users":{"a":{"username":"A"}},"zz":{"k":true}}"#)
    }

    /// -q leaves import, sync and verify silent on success: a cron job's mail stays empty, and a pipe reads data.
    @Test func quietCommandsPrintNothingOnSuccess() throws {
        let database = try TestPostgres.makeDatabase()
        let tree = #"{"users": {"alice": {"username": "alice"}}}"#
        for command in [["import", "-"], ["sync", "-", "--yes"], ["verify", "-"]] {
            for words in [["-q"] + command, command + ["-q"]] {
                let run = try AdminProcess.run(["--db", database.conninfo] + words, input: tree)
                #expect(
                    run.status == 0 && run.stdout.isEmpty && run.stderr.isEmpty, "\(words): \(run.stdout)\(run.stderr)")
            }
        }
        // Without -q, the report is on stdout and the summary on stderr.
        let loud = try AdminProcess.run(["--db", database.conninfo, "import", "-"], input: tree)
        #expect(loud.stdout.contains(" users ") && !loud.stdout.contains("Imported"), "\(loud.stdout)")
        #expect(loud.stderr.contains("Imported 1 row from -"), "\(loud.stderr)")
    }

    @Test func aSourceHoldingNothingIsRefusedAndAPathSyncsOneNode() throws {
        let database = try TestPostgres.makeDatabase()
        let db = ["--db", database.conninfo]
        #expect(try AdminProcess.run(db + ["-q", "import", "-"], input: tree).status == 0)
        let empty = try AdminProcess.run(db + ["sync", "-"], input: "{}")
        #expect(empty.status == 1)
        #expect(empty.stderr.contains("would delete everything"), "\(empty.stderr)")

        let users = try AdminProcess.run(
            db + ["sync", "-", "--path", "/users/bob"], input: #"{"username": "robert"}"#)
        #expect(users.status == 0, "\(users.stderr)")
        #expect(
            try AdminProcess.run(db + ["-q", "get", "/users/bob/username"]).stdout == "\"robert\"\n")
    }

    /// kill -9 while the sync is in the middle of its writes (waiting for a row another session holds): the
    /// store is as it was.
    @Test func killingTheConsoleDuringTheWritesChangesNothing() throws {
        let database = try TestPostgres.makeDatabase()
        let db = ["--db", database.conninfo]
        let directory = try makeTemporaryDirectory("admin-sync-kill")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let generated = try AdminProcess.run(
            ["-q", "generate", directory + "/base.json", "--users", "300", "--seed", "3"])
        #expect(generated.status == 0, "\(generated.stderr)")
        #expect(try AdminProcess.run(db + ["-q", "import", directory + "/base.json"]).status == 0)
        let before = try AdminProcess.run(db + ["-q", "export", "-"]).stdout
        // Every user renamed: the newer file rewrites every user record.
        let renamed = try String(contentsOfFile: directory + "/base.json", encoding: .utf8)
            .replacingOccurrences(of: #""username":""#, with: #""username":"new "#)
        try Data(renamed.utf8).write(to: URL(fileURLWithPath: directory + "/newer.json"))

        let holder = try database.connect()
        try holder.execute("BEGIN")
        try holder.execute("SELECT 1 FROM users ORDER BY uid DESC LIMIT 1 FOR UPDATE")
        let (syncing, _, _, _) = try AdminProcess.start(db + ["sync", directory + "/newer.json", "--yes"])
        let observer = try database.connect()
        let deadline = Date().addingTimeInterval(60)
        while try !observer.query(
            """
            SELECT EXISTS (SELECT FROM pg_stat_activity WHERE datname = current_database()
                AND application_name = 'admin sync' AND wait_event_type = 'Lock')
            """)[0].decode(Bool.self, at: 0)
        {
            #expect(Date() < deadline, "the sync never waited for the row")
            if Date() > deadline { break }
            Thread.sleep(forTimeInterval: 0.02)
        }
        kill(syncing.processIdentifier, SIGKILL)
        syncing.waitUntilExit()
        try holder.execute("ROLLBACK")
        #expect(try AdminProcess.run(db + ["-q", "export", "-"]).stdout == before)
        // Left alone, the same sync brings the store over.
        let synced = try AdminProcess.run(db + ["-q", "sync", directory + "/newer.json", "--yes"])
        #expect(synced.status == 0, "\(synced.stderr)")
        #expect(try AdminProcess.run(db + ["-q", "verify", directory + "/newer.json"]).status == 0)
    }
}
