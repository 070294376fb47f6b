import Foundation
import PostgresClient
import PostgresTestSupport
import Storage
import Synchronization
import Testing

/// Console processes run beside each other as cron and operators run them: a read started while an import or a
/// repair holds its locks answers for the store after it, and a read that gives up says so without SQL.
@Suite("Commands beside each other: reads of one instant")
struct ReadsBesideWritersTests {
    /// The cron line of the README, with its metrics file.
    private func cronCheck(_ database: TestDatabase, metrics: String) throws -> (Process, Pipe, Pipe, Pipe) {
        try AdminProcess.start([
            "--db", database.conninfo, "check", "--quiet", "--record", "--fail-on", "new", "--wait", "900",
            "--metrics-file", metrics,
        ])
    }

    /// Waits until `condition` holds (asked of a connection of its own), for at most 60 s.
    private func waitUntil(_ database: TestDatabase, _ what: String, _ condition: (Connection) throws -> Bool)
        throws
    {
        let control = try database.connect()
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            if try condition(control) { return }
            Thread.sleep(forTimeInterval: 0.02)
        }
        Issue.record("timed out waiting until \(what)")
    }

    /// Whether a session other than an import waits for a lock.
    private func someoneWaits(_ connection: Connection) throws -> Bool {
        try connection.query(
            """
            SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'
                AND application_name <> 'admin import'
            """
        )[0].decode(Int.self, at: 0) > 0
    }

    /// Whether an import holds the tree's tables (against writes, while it loads rows beside them; against reads
    /// too when it could not).
    private func anImportHoldsTheTables(_ connection: Connection) throws -> Bool {
        try connection.query(
            """
            SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid)
            WHERE a.application_name = 'admin import' AND l.relation = 'users'::regclass
                AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
                AND l.mode IN ('AccessExclusiveLock', 'ExclusiveLock') AND l.granted
            """
        )[0].decode(Int.self, at: 0) > 0
    }

    /// Gives `database`'s users an operator's trigger, which a switch of tables cannot carry: a whole-tree
    /// import there locks readers out until it commits.
    private func lockingReadersOut(_ database: TestDatabase) throws {
        try database.connect().execute(
            script: """
                CREATE FUNCTION audit() RETURNS trigger LANGUAGE plpgsql AS 'BEGIN RETURN NEW; END';
                CREATE TRIGGER audit BEFORE INSERT ON users FOR EACH ROW EXECUTE FUNCTION audit();
                """)
    }

    /// Each check's violations in a metrics file.
    private func violations(in metrics: String) throws -> [String: Double] {
        try samples(in: metrics).filter { $0.key.hasPrefix("admin_check_violations") }
    }

    /// Starts `admin import -` on `database` and feeds it the first half of `json`; returns a function that
    /// feeds the rest and waits for the import to end (its exit status).
    private func importHalfway(_ database: TestDatabase, _ json: String) throws -> () throws -> Int32 {
        let (process, input, _, _) = try AdminProcess.start(["--db", database.conninfo, "-q", "import", "-", "-y"])
        let bytes = Data(json.utf8)
        input.fileHandleForWriting.write(bytes.prefix(bytes.count / 2))
        try waitUntil(database, "the import holds the tables", anImportHoldsTheTables)
        return {
            input.fileHandleForWriting.write(bytes.dropFirst(bytes.count / 2))
            try input.fileHandleForWriting.close()
            process.waitUntilExit()
            return process.terminationStatus
        }
    }

    private func wait(_ started: (Process, Pipe, Pipe, Pipe)) -> AdminRun {
        let (process, _, output, errors) = started
        let stdout = output.fileHandleForReading.readDataToEndOfFile()
        let stderr = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return AdminRun(
            status: process.terminationStatus, stdout: String(decoding: stdout, as: UTF8.self),
            stderr: String(decoding: stderr, as: UTF8.self))
    }

    /// The cron check started during a whole-tree import records the store as it was at once when the import
    /// loads beside the store, and queues and records the imported store when the import locks readers out.
    @Test(arguments: [false, true])
    func theNightlyCheckStartedDuringAnImport(locksReadersOut: Bool) throws {
        let damaged = try AdminProcess.run(["generate", "-", "--users", "40", "--anomalies", "--seed", "3"])
        let smaller = try AdminProcess.run(["generate", "-", "--users", "12", "--seed", "4"])
        let database = try databaseHolding(damaged.stdout)
        if locksReadersOut { try lockingReadersOut(database) }
        let directory = try makeTemporaryDirectory("admin-cron")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let metrics = directory + "/admin_check.prom"
        // Last night's run, on the damaged store.
        let lastNight = directory + "/last-night.prom"
        #expect(
            try AdminProcess.run(["--db", database.conninfo, "check", "--record", "--metrics-file", lastNight]).status
                == 3)

        let finishImport = try importHalfway(database, smaller.stdout)
        let run: AdminRun
        if locksReadersOut {
            let check = try cronCheck(database, metrics: metrics)
            try waitUntil(database, "the check waits for the import", someoneWaits)
            #expect(try finishImport() == 0)
            run = wait(check)
        } else {
            run = wait(try cronCheck(database, metrics: metrics))
            #expect(try finishImport() == 0)
        }

        // The store the check read, checked quietly: the imported one, or the damaged one as it was.
        let quietMetrics = directory + "/quiet.prom"
        _ = try AdminProcess.run(["--db", database.conninfo, "check", "--metrics-file", quietMetrics])
        let expected = try violations(in: locksReadersOut ? quietMetrics : lastNight)
        #expect(expected.count == IntegrityCheck.allCases.count)
        #expect(try violations(in: metrics) == expected)
        #expect(try violations(in: quietMetrics) != (try violations(in: lastNight)))
        #expect(run.status == 0, "no count rose\n\(run.stdout)\(run.stderr)")
        #expect(run.stdout.isEmpty && run.stderr.isEmpty, "--quiet on exit 0: \(run.stdout)\(run.stderr)")
        let history = try AdminProcess.run(["--db", database.conninfo, "check", "--history", "--format", "json"])
        let listed = try #require(try JSONSerialization.jsonObject(with: Data(history.stdout.utf8)) as? [String: Any])
        let recorded = try #require((listed["runs"] as? [[String: Any]])?.first?["checks"] as? [[String: Any]])
        #expect(recorded.count == IntegrityCheck.allCases.count)
        for entry in recorded {
            let name = try #require(entry["name"] as? String)
            #expect(
                (entry["violations"] as? Int).map(Double.init) == expected["admin_check_violations{check=\"\(name)\"}"],
                "\(name)")
        }
    }

    @Test func theNightlyCheckStartedDuringCheckFixRecordsTheStoreAfterTheFix() throws {
        let database = try databaseHolding(damagedTreeWithACleanPost)
        let directory = try makeTemporaryDirectory("admin-cron")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let metrics = directory + "/admin_check.prom"
        #expect(try AdminProcess.run(["--db", database.conninfo, "check", "--record"]).status == 3)

        // The fix stops at the like count it must set, which this transaction holds, until the check queues.
        let holder = try database.connect()
        try holder.execute("BEGIN")
        try holder.execute("SELECT 1 FROM posts WHERE post_key = '-P1' FOR UPDATE")
        let fix = try AdminProcess.start(["--db", database.conninfo, "check", "--fix", "--yes", "-q"])
        try waitUntil(database, "the fix waits for the post") { try someoneWaits($0) }
        let check = try cronCheck(database, metrics: metrics)
        try waitUntil(database, "the check waits for the fix") { connection in
            try connection.query(
                """
                SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
                    AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
                """
            )[0].decode(Int.self, at: 0) == 1
        }
        try holder.execute("COMMIT")
        #expect(wait(fix).status == 0)
        let run = wait(check)

        #expect(run.status == 0, "\(run.stderr)")
        let quietMetrics = directory + "/quiet.prom"
        _ = try AdminProcess.run(["--db", database.conninfo, "check", "--metrics-file", quietMetrics])
        #expect(try violations(in: metrics) == (try violations(in: quietMetrics)), "the counts after the fix")
        #expect(try violations(in: metrics)["admin_check_violations{check=\"like_count\"}"] == 0)
    }

    @Test func exportGetAndVerifyStartedDuringAnImportAnswerForTheStoreAsItWas() throws {
        let before = try AdminProcess.run(["generate", "-", "--users", "30", "--seed", "5"]).stdout
        let after = try AdminProcess.run(["generate", "-", "--users", "50", "--seed", "6"]).stdout
        let database = try databaseHolding(before)
        let directory = try makeTemporaryDirectory("admin-reads")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try before.write(toFile: directory + "/before.json", atomically: true, encoding: .utf8)
        let db = ["--db", database.conninfo]
        #expect(try AdminProcess.run(db + ["export", directory + "/quiet.json"]).status == 0)
        let getArguments = ["get", "/postLikes", "--order-by-key", "--limit-to-last", "3"]
        let quietGet = try AdminProcess.run(db + getArguments)

        // The import loads its rows beside the store's tables: readers neither wait nor see them.
        let finishImport = try importHalfway(database, after)
        let export = try AdminProcess.run(db + ["export", directory + "/during.json"])
        let got = try AdminProcess.run(db + getArguments)
        let verified = try AdminProcess.run(db + ["verify", directory + "/before.json"])
        #expect(try finishImport() == 0)

        #expect(export.status == 0, "\(export.stderr)")
        let during = try String(contentsOfFile: directory + "/during.json", encoding: .utf8)
        #expect(during == (try String(contentsOfFile: directory + "/quiet.json", encoding: .utf8)))
        #expect(during.contains("\"postLikes\""))
        #expect(verified.status == 0, "\(verified.stdout)\(verified.stderr)")
        #expect(got.status == 0 && got.stdout == quietGet.stdout && got.stdout != "null\n", "\(got.stderr)")
        // After the switch, the imported tree.
        let imported = try AdminProcess.run(db + ["export", "-"])
        let alone = try databaseHolding(after)
        #expect(imported.stdout == (try AdminProcess.run(["--db", alone.conninfo, "export", "-"])).stdout)
    }

    /// A console on a pseudo-terminal, at its prompt, beside a whole-tree import that has read half its file
    /// (and that locks readers out when `locksReadersOut`); the function that lets the import finish, and a
    /// directory for the console's files (the caller removes it).
    private func consoleBesideAnImport(locksReadersOut: Bool) throws -> (
        terminal: Terminal, finishImport: () throws -> Int32, directory: String
    ) {
        let database = try databaseHolding(#"{"users": {"a": {"username": "a"}}}"#)
        if locksReadersOut { try lockingReadersOut(database) }
        let directory = try makeTemporaryDirectory("admin-beside")
        let finishImport = try importHalfway(database, #"{"users": {"b": {"username": "b"}}, "pad": "padding"}"#)
        let command = "\(shellQuoted(AdminProcess.executable.path)) --db \(shellQuoted(database.conninfo))"
        let terminal = try Terminal(command, environment: ["ADMIN_HISTORY": directory + "/history", "TERM": "xterm"])
        #expect(try terminal.waitFor("=>"))
        return (terminal, finishImport, directory)
    }

    @Test(.enabled(if: Terminal.isAvailable))
    func aCheckBesideAnImportSaysWhichStoreItReadsOnATerminal() throws {
        let (terminal, finishImport, directory) = try consoleBesideAnImport(locksReadersOut: false)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try terminal.send("check --only orphans", "Enter")
        #expect(
            try terminal.waitFor("Reading the store as it was before an import (pid "),
            "\((try? terminal.screen()) ?? "")")
        #expect(try terminal.waitFor("orphans"), "\((try? terminal.screen()) ?? "")")
        #expect(try finishImport() == 0)
    }

    @Test(.enabled(if: Terminal.isAvailable))
    func aReadThatWaitsSaysWhomForOnATerminal() throws {
        let (terminal, finishImport, directory) = try consoleBesideAnImport(locksReadersOut: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try terminal.send("settings lock_timeout 60", "Enter")
        try terminal.send("export \(directory)/during.json", "Enter")
        #expect(try terminal.waitFor("Waiting up to 60 s for an import (pid "), "\((try? terminal.screen()) ?? "")")
        #expect(try finishImport() == 0)
        #expect(try terminal.waitFor("Exported "), "\((try? terminal.screen()) ?? "")")
        let exported = try String(contentsOfFile: directory + "/during.json", encoding: .utf8)
        #expect(exported.contains(#""b":{"username":"b"}"#), "\(exported)")
    }

    @Test func waitsPastWhatPostgreSQLCanBoundAreRefusedOrCappedNeverACrash() throws {
        let database = try databaseHolding(#"{"users": {"a": {"username": "a"}}}"#)
        for wait in ["1e308", "1e16", "3000000"] {
            for command in [["check"], ["check", "--fix", "--yes"], ["chat", "merge", "--all"]] {
                let run = try AdminProcess.run(["--db", database.conninfo] + command + ["--wait", wait])
                #expect(run.status == 64, "\(command) --wait \(wait): \(run.stderr)")
                #expect(run.stderr.contains("--wait must be at most 2147483 seconds"), "\(run.stderr)")
            }
        }
        #expect(try AdminProcess.run(["--db", database.conninfo, "check", "--wait", "2147483"]).status == 0)
        let capped = try AdminProcess.run([
            "--db", database.conninfo, "-c", "settings lock_timeout 1e308", "-c", "settings", "-c", "get /users",
        ])
        #expect(capped.status == 0, "\(capped.stderr)")
        #expect(capped.stdout.contains(#"{"a":{"username":"a"}}"#), "\(capped.stdout)")
    }

    @Test func aReadThatGivesUpNamesTheImportAndNoSQL() throws {
        let database = try databaseHolding(#"{"users": {"a": {"username": "a"}}}"#)
        try lockingReadersOut(database)
        let finishImport = try importHalfway(database, #"{"users": {"b": {"username": "b"}}, "pad": "padding"}"#)
        let run = try AdminProcess.run([
            "--db", database.conninfo, "-c", "settings lock_timeout 0.3", "-c", "get /users",
        ])
        #expect(try finishImport() == 0)
        #expect(run.status == 1)
        #expect(run.stderr.contains("an import is in progress (pid "), "\(run.stderr)")
        #expect(run.stderr.contains("Nothing was read."), "\(run.stderr)")
        #expect(run.stderr.contains("settings lock_timeout"), "\(run.stderr)")
        #expect(!run.stderr.contains("reads go on meanwhile"), "\(run.stderr)")
        for sql in ["LOCK TABLE", "SELECT", "STATEMENT"] {
            #expect(!run.stderr.contains(sql), "\(run.stderr)")
        }
        #expect(run.stdout.isEmpty)
    }
}
