import Foundation
import PostgresClient
import PostgresTestSupport
import Storage
import Testing

/// The newest migration this build carries.
let latest = Migration.embedded.last!

@Suite("The admin console, end to end")
struct ConsoleTests {
    @Test func statusReportsTheMigratedSchema() throws {
        let database = try TestPostgres.makeDatabase()
        let run = try AdminProcess.run(["--db", database.conninfo, "status"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains("version \(latest.version) (\(latest.fileName)), up to date"))
        // Every table the store keeps, the lookups and the Auth accounts too (not their secrets), in one fixed order.
        let tables = run.stdout.split(separator: "\n").compactMap { line -> String? in
            let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            return cells.count == 2 && cells[1] == "0" ? cells[0] : nil
        }
        #expect(
            tables == [
                "users", "posts", "feed_posts", "post_likes", "followers", "following", "timeline", "chats", "messages",
                "unmapped_values", "post_keys", "chat_holders", "auth_accounts", "auth_providers",
            ], "\(run.stdout)")
        #expect(run.stdout.contains("(14 rows)"))
        #expect(run.stderr.isEmpty)
    }

    @Test func statusAsJSONIsOneDocument() throws {
        let database = try TestPostgres.makeDatabase()
        try database.connect().execute("INSERT INTO users (uid, username) VALUES ('u1', 'ana'), ('u2', 'bo')")
        let run = try AdminProcess.run(["--db", database.conninfo, "status", "--format", "json"])
        #expect(run.status == 0)
        let object = try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any]
        #expect(object?["schema_version"] as? Int == latest.version)
        #expect((object?["tables"] as? [String: Any])?["users"] as? Int == 2)
        #expect((object?["connection"] as? String)?.contains(database.name) == true)
    }

    /// Only migrate changes the schema of a database the operator named: status and migrate --list read it,
    /// and other commands say what to run.
    @Test func onlyMigrateChangesANamedDatabasesSchema() throws {
        let database = try TestPostgres.makeEmptyDatabase()
        let all = Migration.embedded.map(\.fileName)
        for _ in 0..<2 {
            let untouched = try AdminProcess.run(["--db", database.conninfo, "status"])
            #expect(untouched.status == 0, "\(untouched.stderr)")
            // The first and the last by name, not all of them in one cell; migrate --list names them all.
            #expect(
                untouched.stdout.contains(
                    "version 0, \(all.count) pending: \(all[0]) … \(all[all.count - 1]) (migrate --list names them)"),
                "\(untouched.stdout)")
            let listed = try AdminProcess.run(["--db", database.conninfo, "migrate", "--list", "--format", "csv"])
            #expect(listed.status == 0, "\(listed.stderr)")
            #expect(listed.stdout.contains("1,0001_firebase_tree.sql,pending,"))
        }
        let refused = try AdminProcess.run(["--db", database.conninfo, "check"])
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("has no admin schema"))
        #expect(refused.stderr.contains("Run `admin migrate`"))
        #expect(!refused.stderr.contains("does not exist"))
        let migrated = try AdminProcess.run(["--db", database.conninfo, "migrate"])
        #expect(migrated.status == 0)
        #expect(migrated.stderr.contains("Applied 0001_firebase_tree.sql."))
        let again = try AdminProcess.run(["--db", database.conninfo, "migrate"])
        #expect(again.stderr.contains("up to date (version \(latest.version))"))
        let quiet = try AdminProcess.run(["--db", database.conninfo, "--quiet", "migrate"])
        #expect(quiet.stderr.isEmpty)
    }

    @Test func aChangedMigrationStopsTheConsole() throws {
        let database = try TestPostgres.makeDatabase()
        try database.connect().execute("UPDATE schema_migrations SET checksum = repeat('0', 64)")
        let run = try AdminProcess.run(["--db", database.conninfo, "status"])
        #expect(run.status == 1)
        #expect(run.stderr.contains("was changed after it was applied"))
    }

    @Test func scriptErrorsNameFileAndLineAndStopByDefault() throws {
        let database = try TestPostgres.makeDatabase()
        let directory = try makeTemporaryDirectory("admin-script")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let script = directory + "/nightly.admin"
        try "# nightly\nstatus --format csv\n\nbogus command\nstatus --format csv\n".write(
            toFile: script, atomically: true, encoding: .utf8)

        let stopped = try AdminProcess.run(["--db", database.conninfo, "-f", script])
        #expect(stopped.status == 64)
        #expect(stopped.stderr.contains("admin:\(script):4: bogus: unknown command \"bogus\""))
        #expect(stopped.stdout.components(separatedBy: "kind,name,value").count == 2)

        let continued = try AdminProcess.run(["--db", database.conninfo, "--on-error", "continue", "-f", script])
        #expect(continued.status == 64)
        #expect(continued.stdout.components(separatedBy: "kind,name,value").count == 3)
    }

    @Test func scriptFilesThatCannotBeReadAreNamedWithTheReason() throws {
        let database = try TestPostgres.makeDatabase()
        let directory = try makeTemporaryDirectory("admin-script")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let missing = try AdminProcess.run(["--db", database.conninfo, "-f", directory + "/none.admin"])
        #expect(missing.status == 1)
        #expect(missing.stderr == "admin: cannot open \(directory)/none.admin: No such file or directory\n")
        let folder = try AdminProcess.run(["--db", database.conninfo, "-f", directory])
        #expect(folder.status == 1)
        #expect(folder.stderr == "admin: cannot read \(directory): it is a directory\n")
        // Bytes that are not UTF-8 do not refuse the script: the line holding them fails, as a typo would.
        let script = directory + "/latin1.admin"
        try Data("status --format csv\nbogus \u{E9}\n".utf8.map { $0 == 0xC3 ? 0xE9 : $0 }.filter { $0 != 0xA9 })
            .write(to: URL(fileURLWithPath: script))
        let latin1 = try AdminProcess.run(["--db", database.conninfo, "-f", script])
        #expect(latin1.status == 64)
        #expect(latin1.stdout.hasPrefix("kind,name,value\n"))
        #expect(latin1.stderr.contains("admin:\(script):2: bogus: unknown command"))
    }

    @Test func commandsFromStdinAndDashC() throws {
        let database = try TestPostgres.makeDatabase()
        let piped = try AdminProcess.run(
            ["--db", database.conninfo], input: "migrate --list --format csv\nquit\nstatus\n")
        #expect(piped.status == 0, "\(piped.stderr)")
        #expect(piped.stdout.hasPrefix("version,file,state,applied_at\n1,0001_firebase_tree.sql,applied,"))
        #expect(!piped.stdout.contains("setting"))

        let echoed = try AdminProcess.run([
            "--db", database.conninfo, "--echo", "-c", "migrate --list --format csv", "-c", "help",
        ])
        #expect(echoed.status == 0)
        #expect(echoed.stdout.hasPrefix("migrate --list --format csv\nversion,file"))
        #expect(echoed.stdout.contains("Status and schema:"))

        let failing = try AdminProcess.run(["--db", database.conninfo], input: "status --bogus\n")
        #expect(failing.status == 64)
        #expect(failing.stderr.contains("admin:<stdin>:1: status:"))
    }

    @Test func usageErrorsExitWith64() throws {
        #expect(try AdminProcess.run(["frobnicate"]).status == 64)
        #expect(try AdminProcess.run(["--no-such-option"]).status == 64)
        #expect(try AdminProcess.run(["-c", "status", "status"]).status == 64)
        let unterminated = try AdminProcess.run(["-c", "status 'open"])
        #expect(unterminated.status == 64)
        #expect(unterminated.stderr.contains("unterminated single quote"))
        // watch's SECONDS is range-checked like every numeric option, not taken as 2 s or as forever.
        for seconds in ["0", "-5", "nan", "inf", "1e9"] {
            let watch = try AdminProcess.run(["watch", seconds, "status"])
            #expect(watch.status == 64, "watch \(seconds)")
            #expect(watch.stderr.contains("SECONDS must be more than 0 and at most 86400 (a day), not \(seconds)"))
        }
    }

    @Test func helpDocumentsCommandsAndExitCodes() throws {
        let run = try AdminProcess.run(["--help"])
        #expect(run.status == 0)
        for text in ["Exit codes:", "64  usage error", "status", "migrate", "--data-dir", "DATABASE_URL"] {
            #expect(run.stdout.contains(text), "missing \(text)")
        }
        // The command list fits 80 columns, a long summary going on under itself, never back at the margin.
        let list = run.stdout.components(separatedBy: "Status and schema:")[1].components(separatedBy: "Type `help")[0]
        for line in list.split(separator: "\n") {
            #expect(line.count < 80, "too wide: \(line)")
            #expect(line.hasPrefix("  ") || line.hasSuffix(":"), "back at the margin: \(line)")
        }
        #expect(
            list.contains(
                "  vacuum       VACUUM the tree's tables: give back the space of deleted and\n               rolled-back rows."
            ))
        let commandHelp = try AdminProcess.run(["status", "--help"])
        let helpCommand = try AdminProcess.run(["help", "status"])
        let shortHelp = try AdminProcess.run(["-c", "status -h"])
        #expect(commandHelp.stdout.contains("USAGE: admin status"))
        #expect(
            commandHelp.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
                == helpCommand.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
        #expect(shortHelp.stdout == commandHelp.stdout)
    }

    @Test func unreachableServersExitWith2AndNeverShowThePassword() throws {
        let run = try AdminProcess.run([
            "--db", "postgresql://operator:correct-horse-battery@/app?host=/nonexistent-socket-dir&connect_timeout=2",
            "status",
        ])
        #expect(run.status == 2)
        #expect(run.stderr.contains("/nonexistent-socket-dir"))
        #expect(!run.stderr.contains("correct-horse-battery"))
        #expect(!run.stdout.contains("correct-horse-battery"))

        let fromEnvironment = try AdminProcess.run(
            ["status"], environment: ["PGHOST": "/nonexistent-socket-dir", "PGPASSWORD": "correct-horse-battery"])
        #expect(fromEnvironment.status == 2)
        #expect(!fromEnvironment.stderr.contains("correct-horse-battery"))
    }

    @Test func aPasswordNeverShowsOnAWorkingConnectionEither() throws {
        let database = try TestPostgres.makeDatabase()
        let settings = try #require(ConnectionOptions.parse(database.conninfo))
        // The test server trusts local connections, so the password is accepted and ignored.
        let conninfo =
            "host=\(settings["host"] ?? "") port=\(settings["port"] ?? "5432") user=\(settings["user"] ?? "") "
            + "dbname=\(database.name) password=correct-horse-battery"
        for format in ["table", "json", "csv"] {
            let run = try AdminProcess.run(["--db", conninfo, "status", "--format", format])
            #expect(run.status == 0, "\(run.stderr)")
            #expect(run.stdout.contains(database.name))
            #expect(!run.stdout.contains("correct-horse-battery") && !run.stderr.contains("correct-horse-battery"))
        }
        let echoed = try AdminProcess.run(
            ["--db", conninfo, "-e", "-c", "status"], environment: ["PGPASSWORD": "tr0ub4dor"])
        #expect(echoed.status == 0, "\(echoed.stderr)")
        #expect(!(echoed.stdout + echoed.stderr).contains("correct-horse-battery"))
        #expect(!(echoed.stdout + echoed.stderr).contains("tr0ub4dor"))
    }

    @Test func libpqEnvironmentVariablesAreHonored() throws {
        let database = try TestPostgres.makeDatabase()
        let settings = try #require(ConnectionOptions.parse(database.conninfo))
        let run = try AdminProcess.run(
            ["status", "--format", "json"],
            environment: [
                "PGHOST": settings["host"] ?? "", "PGPORT": settings["port"] ?? "", "PGUSER": settings["user"] ?? "",
                "PGDATABASE": database.name,
            ])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains(database.name))
    }
}
