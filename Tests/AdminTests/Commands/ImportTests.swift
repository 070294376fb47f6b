import Foundation
import PostgresTestSupport
import Testing

private let fixture = Repository.url("Tests/StorageTests/Fixtures/friendlypix-console-export.json").path

@Suite("import and export commands")
struct ImportExportCommandTests {
    /// inspect reads a file as import would and needs no database: the rows it lists are the rows an import
    /// loads, its rejects import's.
    @Test func inspectListsWhatAnImportWouldLoadWithoutADatabase() throws {
        let nowhere = ["--db", "host=/nonexistent dbname=none connect_timeout=1"]
        let run = try AdminProcess.run(nowhere + ["inspect", fixture, "--format", "json"])
        #expect(run.status == 0, "\(run.stderr)")
        let document = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
        #expect(document["rows"] as? Int == 1053 && document["rejected"] as? Int == 0, "\(run.stdout)")
        let table = try AdminProcess.run(nowhere + ["inspect", fixture])
        #expect(table.stdout.contains(" users ") && table.stdout.contains(" total "), "\(table.stdout)")
        #expect(table.stderr.contains("an import would load 1053 rows and reject 0 values"), "\(table.stderr)")

        let bad = #"{"users": {"u1": {"username": "a", "b.c": 1}}, "cfg": {"x": {"y.z": 2}}}"#
        let rejects = try AdminProcess.run(nowhere + ["inspect", "-", "--format", "json"], input: bad)
        #expect(rejects.status == 0 && rejects.stdout.contains(#""rejected": 2"#), "\(rejects.stdout)")
        #expect(rejects.stdout.contains(#""path": "/users/u1/b.c""#), "\(rejects.stdout)")
        let malformed = try AdminProcess.run(nowhere + ["inspect", "-"], input: #"{"users": {"#)
        #expect(malformed.status == 1, "\(malformed.stderr)")
    }

    @Test func importThenExportGivesTheFileBack() throws {
        let database = try TestPostgres.makeDatabase()
        let directory = try makeTemporaryDirectory("admin-ie")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let output = directory + "/out.json"
        let run = try AdminProcess.run([
            "--db", database.conninfo, "-c", "import \(fixture)", "-c", "export \(output) --pretty",
        ])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains(" users           | users                 |       241 |      241 |"))
        #expect(run.stderr.contains("Imported 1053 rows from \(fixture)"))
        // Below the nodes, what followed the reading: the lookups, the secondary indexes built after the rows, the
        // statistics of every table filled, the switch of the tables filled beside the store's, and the commit.
        let after = run.stdout.split(separator: "\n").filter { $0.hasPrefix(" (after reading) ") }
        #expect(
            after.map { $0.split(separator: "|")[1].trimmingCharacters(in: .whitespaces) }.dropLast(4) == [
                "post_keys", "chat_holders",
            ])
        #expect(after.dropLast(3).last?.contains(" indexes ") == true)
        #expect(after.dropLast(2).last?.contains(" statistics, 12 tables ") == true)
        #expect(after.dropLast().last?.contains(" switch ") == true)
        #expect(after.last?.contains(" commit ") == true)
        #expect(run.stderr.contains("Exported 1053 rows as 192980 bytes of JSON to \(output)"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: output)) == Data(contentsOf: URL(fileURLWithPath: fixture)))

        let refused = try AdminProcess.run(["--db", database.conninfo, "export", output])
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("exists; use --force"))
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: directory)
        #expect(leftovers == ["out.json"])
    }

    @Test func gzippedExportsAreReadAsTheyStream() throws {
        let database = try TestPostgres.makeDatabase()
        let directory = try makeTemporaryDirectory("admin-gz")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let gzip = Process()
        gzip.executableURL = URL(fileURLWithPath: "/bin/sh")
        gzip.arguments = [
            "-c",
            "gzip -c '\(fixture)' > \(directory)/backup.json.gz && "
                + "head -c 20000 \(directory)/backup.json.gz > \(directory)/cut.json.gz",
        ]
        try gzip.run()
        gzip.waitUntilExit()
        let run = try AdminProcess.run(["--db", database.conninfo, "import", directory + "/backup.json.gz"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stderr.contains("Imported 1053 rows"))
        let cut = try AdminProcess.run(["--db", database.conninfo, "import", directory + "/cut.json.gz"])
        #expect(cut.status == 1)
        #expect(cut.stderr.contains("truncated"))
        let export = try AdminProcess.run(["--db", database.conninfo, "-q", "export", "-", "--pretty"])
        #expect(export.stdout == (try String(contentsOfFile: fixture, encoding: .utf8)))

        // A path that holds nothing exports null, as Firebase answers, with a warning a backup job cannot miss.
        let nothing = directory + "/nothing.json"
        let missing = try AdminProcess.run(["--db", database.conninfo, "export", nothing, "--path", "/no/such/node"])
        #expect(missing.status == 0, "\(missing.stderr)")
        #expect(missing.stderr.contains("WARNING:  nothing at /no/such/node: the export is null"), "\(missing.stderr)")
        #expect(try String(contentsOfFile: nothing, encoding: .utf8) == "null")

        // A .gz export says the JSON's size and the file's, which differ.
        let zipped = directory + "/again.json.gz"
        let written = try AdminProcess.run(["--db", database.conninfo, "export", zipped, "--pretty"])
        let size = try #require(try FileManager.default.attributesOfItem(atPath: zipped)[.size] as? Int)
        #expect(size < 192_980)
        #expect(
            written.stderr.contains("as 192980 bytes of JSON (\(size) bytes gzipped) to \(zipped)"), "\(written.stderr)"
        )
    }

    @Test func jobsLoadTheSameStoreWhateverTheirNumberAndTheFile() throws {
        let database = try TestPostgres.makeDatabase()
        let directory = try makeTemporaryDirectory("admin-jobs")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = directory + "/tree.json"
        #expect(
            try AdminProcess.run(["-q", "generate", file, "--users", "60", "--anomalies", "--seed", "9"]).status == 0)
        let db = ["--db", database.conninfo]
        var exports: Set<String> = []
        var reports: Set<String> = []
        // Several sessions for a plain file and a compressed one (each session decompresses it); one for stdin,
        // which cannot be read twice.
        for arguments in [["--jobs", "1"], ["--jobs", "2"], ["--jobs", "4"], []] {
            let run = try AdminProcess.run(db + ["import", file, "-y", "--format", "json"] + arguments)
            #expect(run.status == 0, "\(arguments): \(run.stderr)")
            let report = try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any]
            let tables = (report?["tables"] as? [[String: Any]] ?? []).map {
                "\($0["node"] ?? "") \($0["table"] ?? "") \($0["rows_imported"] ?? "")"
            }
            let steps = (report?["after_reading"] as? [[String: Any]] ?? []).map {
                "\($0["target"] ?? "") \($0["count"] ?? "")"
            }
            reports.insert((tables + steps).joined(separator: "\n"))
            exports.insert(try AdminProcess.run(db + ["-q", "export", "-"]).stdout)
        }
        // Sessions asked for where one loads: a warning, and the same import.
        let piped = try AdminProcess.run(
            db + ["-q", "import", "-", "-y", "--jobs", "2"], input: try String(contentsOfFile: file, encoding: .utf8))
        #expect(piped.status == 0, "\(piped.stderr)")
        #expect(
            piped.stderr.contains(
                "WARNING:  /: 2 loading sessions were asked for, but one loaded: the input cannot be read again"),
            "\(piped.stderr)")
        exports.insert(try AdminProcess.run(db + ["-q", "export", "-"]).stdout)
        #expect(
            try AdminProcess.run(["-q", "generate", file + ".gz", "--users", "60", "--anomalies", "--seed", "9"])
                .status == 0)
        for jobs in ["1", "2"] {
            let compressed = try AdminProcess.run(
                db + ["import", file + ".gz", "-y", "--format", "json", "--jobs", jobs])
            #expect(compressed.status == 0 && compressed.stderr.isEmpty, "\(compressed.stderr)")
            let report = try JSONSerialization.jsonObject(with: Data(compressed.stdout.utf8)) as? [String: Any]
            #expect(report?["sessions"] as? Int == Int(jobs), "\(compressed.stdout)")
            exports.insert(try AdminProcess.run(db + ["-q", "export", "-"]).stdout)
        }
        #expect(exports.count == 1 && reports.count == 1, "\(reports)")
        let refused = try AdminProcess.run(db + ["import", file, "-y", "--jobs", "0"])
        #expect(refused.status == 64 && refused.stderr.contains("--jobs must be 1 or more"), "\(refused.stderr)")
    }

    @Test func stdinToStdoutWithAJSONReport() throws {
        let database = try TestPostgres.makeDatabase()
        let run = try AdminProcess.run(
            ["--db", database.conninfo, "import", "-", "--format", "json"], input: #"{"b": [1, 2], "a": {"x": true}}"#)
        #expect(run.status == 0, "\(run.stderr)")
        let report = try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any]
        #expect(report?["rows_imported"] as? Int == 3)
        #expect(report?["file"] as? String == "-")
        let after = report?["after_reading"] as? [[String: Any]]
        #expect(
            after?.map { $0["target"] as? String } == [
                "post_keys", "chat_holders", "indexes", "statistics", "switch", "commit",
            ])
        #expect((after?.dropLast(3).last?["count"] as? Int ?? 0) > 10)
        #expect(report?.keys.contains("readers_locked_out") == true && report?["readers_locked_out"] is NSNull)
        // stdin is read once, by the import's own session.
        #expect(report?["sessions"] as? Int == 1)
        #expect(after?.allSatisfy { ($0["seconds"] as? Double ?? -1) >= 0 } == true)
        // --keep-indexes builds none after the rows: they load into tables that have them (here in a dry run,
        // which never switches).
        let kept = try AdminProcess.run(
            ["--db", database.conninfo, "import", "-", "--format", "json", "--keep-indexes", "--dry-run"],
            input: #"{"b": 1}"#)
        #expect(kept.status == 0, "\(kept.stderr)")
        let keptReport = try JSONSerialization.jsonObject(with: Data(kept.stdout.utf8)) as? [String: Any]
        let keptSteps = keptReport?["after_reading"] as? [[String: Any]]
        #expect(keptSteps?.map { $0["target"] as? String } == ["post_keys", "chat_holders"])
        let export = try AdminProcess.run(["--db", database.conninfo, "-q", "export", "-"])
        #expect(export.stdout == #"{"a":{"x":true},"b":[1,2]}"#)
        #expect(export.stderr.isEmpty)
    }

    @Test func aFailedImportSaysWhereAndChangesNothing() throws {
        let database = try TestPostgres.makeDatabase()
        let directory = try makeTemporaryDirectory("admin-if")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        _ = try AdminProcess.run(["--db", database.conninfo, "import", "-"], input: #"{"kept": 1}"#)
        let broken = directory + "/broken.json"
        try Data(#"{"users": {"u1": {"username": "a"}, "u2": {"username": tru}}}"#.utf8).write(
            to: URL(fileURLWithPath: broken))
        let run = try AdminProcess.run(["--db", database.conninfo, "import", broken])
        #expect(run.status == 1)
        #expect(run.stderr.contains("malformed JSON at byte 55 (line 1, column 56)"))
        #expect(run.stderr.contains("reading /users/u2/username"))
        #expect(run.stderr.contains("import rolled back"))
        let export = try AdminProcess.run(["--db", database.conninfo, "-q", "export", "-"])
        #expect(export.stdout == #"{"kept":1}"#)
    }

    @Test func rejectsGoToTheRejectsFile() throws {
        let database = try TestPostgres.makeDatabase()
        let directory = try makeTemporaryDirectory("admin-ir")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let rejects = directory + "/rejects.jsonl"
        let input = #"{"a": {"bad.key": {"x": 1}, "ok": 2}, "b": "nul\u0000"}"#
        let aborted = try AdminProcess.run(
            ["--db", database.conninfo, "import", "-", "--rejects", rejects], input: input)
        #expect(aborted.status == 1)
        #expect(aborted.stderr.contains("rejected /a/bad.key: key contains '.'"))
        #expect(aborted.stderr.contains("--max-rejects"))

        // The first run's file is not silently replaced.
        let refused = try AdminProcess.run(
            ["--db", database.conninfo, "import", "-", "--max-rejects", "5", "--rejects", rejects], input: input)
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("the rejects file \(rejects) exists"))
        #expect(refused.stderr.contains("--force"))

        let run = try AdminProcess.run(
            ["--db", database.conninfo, "import", "-", "--max-rejects", "5", "--rejects", rejects, "--force"],
            input: input)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(try FileManager.default.attributesOfItem(atPath: rejects)[.posixPermissions] as? Int == 0o600)
        #expect(run.stderr.contains("2 rejected values written to \(rejects)"))
        let lines = try String(contentsOfFile: rejects, encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 2)
        let first = try JSONSerialization.jsonObject(with: Data(lines[0].utf8)) as? [String: Any]
        #expect(first?["path"] as? String == "/a/bad.key")
        #expect(first?["reason"] as? String == "key contains '.', which Firebase forbids in keys")
        #expect((first?["value"] as? [String: Any])?["x"] as? Int == 1)
        let export = try AdminProcess.run(["--db", database.conninfo, "-q", "export", "-"])
        #expect(export.stdout == #"{"a":{"ok":2}}"#)

        // --force with nothing rejected removes the earlier import's file.
        let clean = try AdminProcess.run(
            ["--db", database.conninfo, "-q", "import", "-", "--rejects", rejects, "--force", "--yes"],
            input: #"{"a": 1}"#)
        #expect(clean.status == 0, "\(clean.stderr)")
        #expect(!FileManager.default.fileExists(atPath: rejects))
    }

    @Test func aRejectedValueOverOneMegabyteIsCutIntoAFieldOfItsOwn() throws {
        let database = try TestPostgres.makeDatabase()
        let directory = try makeTemporaryDirectory("admin-ir")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let rejects = directory + "/rejects.jsonl"
        let big = String(repeating: "é", count: 700_000)
        let input = #"{"a": {"b.c": {"text": "\#(big)"}, "d$": [1, 2]}, "ok": true}"#
        let run = try AdminProcess.run(
            ["--db", database.conninfo, "-q", "import", "-", "--max-rejects", "2", "--rejects", rejects], input: input)
        #expect(run.status == 0, "\(run.stderr)")
        let lines = try String(contentsOfFile: rejects, encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 2)
        let cut = try #require(try JSONSerialization.jsonObject(with: Data(lines[0].utf8)) as? [String: Any])
        #expect(cut["path"] as? String == "/a/b.c")
        #expect(cut["truncated"] as? Bool == true)
        #expect(cut["value"] == nil)
        #expect((cut["value_bytes"] as? Int ?? 0) > 1_400_000)
        let prefix = try #require(cut["value_prefix"] as? String)
        #expect(prefix.hasPrefix(#"{"text":"ééé"#))
        #expect(prefix.utf8.count <= 1 << 20 && prefix.utf8.count > (1 << 20) - 4)
        let whole = try #require(try JSONSerialization.jsonObject(with: Data(lines[1].utf8)) as? [String: Any])
        #expect(whole["value"] as? [Int] == [1, 2])
        #expect(whole["truncated"] == nil)
    }

    @Test func aScriptThatImportsNullDoesNotWipeTheStore() throws {
        let database = try TestPostgres.makeDatabase()
        _ = try AdminProcess.run(["--db", database.conninfo, "import", "-"], input: #"{"kept": 1}"#)
        for empty in ["null", "{}"] {
            let refused = try AdminProcess.run(["--db", database.conninfo, "import", "-"], input: empty)
            #expect(refused.status == 1)
            #expect(refused.stderr.contains("the file holds nothing"), "\(refused.stderr)")
            #expect(refused.stderr.contains("--allow-empty"))
        }
        let kept = try AdminProcess.run(["--db", database.conninfo, "-q", "export", "-"])
        #expect(kept.stdout == #"{"kept":1}"#)
        let emptied = try AdminProcess.run(
            ["--db", database.conninfo, "-q", "import", "-", "--allow-empty"], input: "null")
        #expect(emptied.status == 0, "\(emptied.stderr)")
        let export = try AdminProcess.run(["--db", database.conninfo, "-q", "export", "-"])
        #expect(export.stdout == "null")
    }

    @Test func aPasswordInDBIsWarnedAbout() throws {
        let database = try TestPostgres.makeDatabase()
        let run = try AdminProcess.run(["--db", database.conninfo + " password=secret", "-q", "get", "/"])
        #expect(run.stdout == "null\n")
        #expect(run.stderr.contains("a password given in --db is visible"))
        #expect(run.stderr.contains("~/.pgpass"))
        #expect(!run.stderr.contains("secret"))
        let quiet = try AdminProcess.run(["--db", database.conninfo, "-q", "get", "/"])
        #expect(quiet.stderr.isEmpty, "\(quiet.stderr)")
    }

    @Test func vacuumGivesBackARolledBackImportsSpace() throws {
        let database = try TestPostgres.makeDatabase()
        let users = (0..<20000).map {
            #""u\#($0)": {"username": "user \#($0) \#(String(repeating: "x", count: 100))"}"#
        }
        let input = #"{"users": {"# + users.joined(separator: ",") + "}, \"broken\": tru}"
        // Autovacuum would otherwise race the command for the dead rows on a loaded machine (and be cancelled by it
        // half-way), leaving it nothing to give back.
        try database.connect().execute("ALTER TABLE users SET (autovacuum_enabled = false)")
        let failed = try AdminProcess.run(["--db", database.conninfo, "import", "-", "--mode", "merge"], input: input)
        #expect(failed.status == 1)
        let run = try AdminProcess.run(["--db", database.conninfo, "vacuum", "--format", "csv"])
        #expect(run.status == 0, "\(run.stderr)")
        let lines = run.stdout.split(separator: "\n")
        #expect(lines.first == "table,bytes before,bytes after")
        let usersRow = try #require(lines.first { $0.hasPrefix("users,") }).split(separator: ",")
        #expect(Int(usersRow[2])! < Int(usersRow[1])!, "\(usersRow)")
        #expect(run.stderr.contains("Gave back"))
    }

    @Test func outputFilesNeverWriteThroughALink() throws {
        let database = try TestPostgres.makeDatabase()
        let directory = try makeTemporaryDirectory("admin-link")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        _ = try AdminProcess.run(
            ["--db", database.conninfo, "import", "-"], input: #"{"users": {"u": {"username": "private"}}}"#)
        let victim = directory + "/victim"
        try Data("keep me".utf8).write(to: URL(fileURLWithPath: victim))
        for name in ["export.json", "get.json", "generated.json", "o.txt"] {
            try FileManager.default.createSymbolicLink(atPath: "\(directory)/\(name)", withDestinationPath: victim)
        }
        // The attack on predictable temporary names (DIR/.NAME.PID.tmp): links planted for the next PIDs.
        let lastPID =
            Int(
                try String(contentsOfFile: "/proc/sys/kernel/ns_last_pid", encoding: .utf8)
                    .trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        var planted: [String] = []
        for pid in (lastPID + 1)...(lastPID + 300) {
            for name in ["export.json", "get.json", "generated.json"] {
                planted.append("\(directory)/.\(name).\(pid).tmp")
                try FileManager.default.createSymbolicLink(atPath: planted.last!, withDestinationPath: victim)
            }
        }
        // Refused without --force (the name is taken), replaced as a name with it: never written through.
        let refused = try AdminProcess.run(["--db", database.conninfo, "export", directory + "/export.json"])
        #expect(refused.status == 1)
        let runs = [
            ["export", directory + "/export.json", "--force"],
            ["get", "/users", "-o", directory + "/get.json", "--force"],
            ["generate", directory + "/generated.json", "--users", "3", "--force"],
        ]
        for arguments in runs {
            let run = try AdminProcess.run(["--db", database.conninfo, "-q"] + arguments)
            #expect(run.status == 0, "\(arguments): \(run.stderr)")
            let path = arguments.first { $0.hasPrefix(directory) }!
            let attributes = try FileManager.default.attributesOfItem(atPath: path)
            #expect(attributes[.type] as? FileAttributeType == .typeRegular, "\(path) is still a link")
            #expect(attributes[.posixPermissions] as? Int == 0o600)
        }
        #expect(try String(contentsOfFile: directory + "/get.json", encoding: .utf8).contains("private"))
        // psql's \o opens its file without following a link.
        let redirected = try AdminProcess.run([
            "--db", database.conninfo, "-c", "\\o \(directory)/o.txt", "-c", "get /",
        ])
        #expect(redirected.status == 1)
        #expect(try String(contentsOfFile: victim, encoding: .utf8) == "keep me")
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: directory)
            .filter { $0.hasPrefix(".") && !planted.contains("\(directory)/\($0)") }
        #expect(leftovers.isEmpty, "\(leftovers)")
    }
}

/// The default rejects file belongs to an import that commits: a dry run or a failed import names the first
/// rejects instead of leaving a file that would stop the next try, the one its hint suggests.
@Suite("import's rejects beside dry runs and failures")
struct ImportRejectsFileTests {
    @Test func aDryRunOrAFailureLeavesNoDefaultRejectsFile() throws {
        let database = try databaseHolding(#"{"kept": 1}"#)
        let directory = try makeTemporaryDirectory("admin-rf")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = directory + "/odd.json"
        try #"{"a": {"bad.key": 1, "ok": 2}, "b$": 3}"#.write(toFile: file, atomically: true, encoding: .utf8)
        let defaultFile = directory + "/odd.json.rejects.jsonl"
        for arguments in [["--dry-run"], ["--dry-run", "--max-rejects", "1"], []] {
            let run = try AdminProcess.run(
                ["--db", database.conninfo, "import", file, "--yes"] + arguments, directory: directory)
            #expect(run.status == 1, "\(arguments): \(run.stderr)")
            #expect(!FileManager.default.fileExists(atPath: defaultFile), "\(arguments)")
            #expect(run.stderr.contains("/a/bad.key: key contains '.'"), "\(run.stderr)")
        }
        let listed = try AdminProcess.run(
            ["--db", database.conninfo, "import", file, "--dry-run", "--max-rejects", "5"], directory: directory)
        #expect(listed.status == 0, "\(listed.stderr)")
        #expect(listed.stderr.contains("2 rejected values, not kept (nothing was imported):"), "\(listed.stderr)")
        #expect(listed.stderr.contains("/b$: key contains '$'"), "\(listed.stderr)")
        #expect(!FileManager.default.fileExists(atPath: defaultFile))
        // The hint's next step works: the real import keeps its rejects in the default file.
        let imported = try AdminProcess.run(
            ["--db", database.conninfo, "import", file, "--max-rejects", "5", "--yes"], directory: directory)
        #expect(imported.status == 0, "\(imported.stderr)")
        #expect(imported.stderr.contains("2 rejected values written to odd.json.rejects.jsonl"), "\(imported.stderr)")
        #expect(FileManager.default.fileExists(atPath: defaultFile))
    }

    @Test func aFileWhoseEveryValueWasRejectedIsNotCalledEmpty() throws {
        let database = try databaseHolding(#"{"kept": 1}"#)
        let directory = try makeTemporaryDirectory("admin-rf")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let run = try AdminProcess.run(
            ["--db", database.conninfo, "import", "-", "--max-rejects", "5", "--rejects", directory + "/r.jsonl"],
            input: #"{"a$": 1, "b.c": 2}"#)
        #expect(run.status == 1)
        #expect(run.stderr.contains("every value in the file was rejected"), "\(run.stderr)")
        #expect(!run.stderr.contains("holds nothing"), "\(run.stderr)")
    }
}

/// `export users.json --path /users` then `import users.json --mode merge` (without `--at`) wrote the users at the
/// top level: the import says so and how to merge it.
@Suite("import's warning for a merged export of one node")
struct MisplacedMergeTests {
    @Test func aMergeOfANodesExportAtTheRootIsWarnedAbout() throws {
        let database = try databaseHolding(#"{"users": {"alice": {"username": "alice"}, "bob": {"username": "bob"}}}"#)
        let export = try AdminProcess.run(["--db", database.conninfo, "-q", "export", "-", "--path", "/users"])
        let merged = try AdminProcess.run(
            ["--db", database.conninfo, "-q", "import", "-", "--mode", "merge"], input: export.stdout)
        #expect(merged.status == 0, "\(merged.stderr)")
        #expect(
            merged.stderr.contains("the file's top-level keys (alice, bob) are children of /users too"),
            "\(merged.stderr)")
        #expect(merged.stderr.contains("merge it with --at /users"))
        let atUsers = try AdminProcess.run(
            ["--db", database.conninfo, "-q", "import", "-", "--mode", "merge", "--at", "/users"], input: export.stdout)
        #expect(atUsers.status == 0 && !atUsers.stderr.contains("children of"), "\(atUsers.stderr)")
        let other = try AdminProcess.run(
            ["--db", database.conninfo, "-q", "import", "-", "--mode", "merge"], input: #"{"config": {"motd": "hi"}}"#)
        #expect(!other.stderr.contains("children of"), "\(other.stderr)")
    }
}

@Suite("import --only and --exclude")
struct ImportSelectionCommandTests {
    @Test func onlyReplacesTheNamedNodesAndKeepsTheRest() throws {
        let database = try databaseHolding(
            #"{"posts": {"u1": {"-P1": {"image_url": "a"}}}, "users": {"u1": {"username": "ana"}}}"#)
        let db = ["--db", database.conninfo]
        let file = #"{"posts": {}, "users": {"u2": {"username": "bo"}}, "q": 1}"#
        let run = try AdminProcess.run(db + ["-q", "import", "-", "--only", "users", "--yes"], input: file)
        #expect(run.status == 0, "\(run.stderr)")
        let exported = try AdminProcess.run(db + ["export", "-"])
        #expect(exported.stdout == #"{"posts":{"u1":{"-P1":{"image_url":"a"}}},"users":{"u2":{"username":"bo"}}}"#)
        let refused = try AdminProcess.run(db + ["import", "-", "--only", "users", "--at", "/x"], input: "{}")
        #expect(refused.status == 64 && refused.stderr.contains("not with --at"), "\(refused.stderr)")
    }
}
