import Foundation
import PostgresTestSupport
import Testing

private let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .appendingPathComponent("../StorageTests/Fixtures/friendlypix-console-export.json").standardized.path

@Suite("import and export commands")
struct ImportExportCommandTests {
    @Test func importThenExportGivesTheFileBack() throws {
        let database = try TestPostgres.makeDatabase()
        let directory = try makeTemporaryDirectory("admin-ie")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let output = directory + "/out.json"
        let run = try AdminProcess.run([
            "--db", database.conninfo, "-c", "import \(fixture)", "-c", "export \(output) --pretty",
        ])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains(" users         | users           |       241 |      241 |"))
        #expect(run.stdout.contains("Imported 1053 rows from \(fixture)"))
        #expect(run.stderr.contains("Exported 1053 rows as 192980 bytes to \(output)"))
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
        gzip.arguments = ["-c", "gzip -c '\(fixture)' > \(directory)/backup.json.gz && "
            + "head -c 20000 \(directory)/backup.json.gz > \(directory)/cut.json.gz"]
        try gzip.run()
        gzip.waitUntilExit()
        let run = try AdminProcess.run(["--db", database.conninfo, "import", directory + "/backup.json.gz"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains("Imported 1053 rows"))
        let cut = try AdminProcess.run(["--db", database.conninfo, "import", directory + "/cut.json.gz"])
        #expect(cut.status == 1)
        #expect(cut.stderr.contains("truncated"))
        let export = try AdminProcess.run(["--db", database.conninfo, "-q", "export", "-", "--pretty"])
        #expect(export.stdout == (try String(contentsOfFile: fixture, encoding: .utf8)))
    }

    @Test func stdinToStdoutWithAJSONReport() throws {
        let database = try TestPostgres.makeDatabase()
        let run = try AdminProcess.run(
            ["--db", database.conninfo, "import", "-", "--format", "json"], input: #"{"b": [1, 2], "a": {"x": true}}"#)
        #expect(run.status == 0, "\(run.stderr)")
        let report = try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any]
        #expect(report?["rows_imported"] as? Int == 3)
        #expect(report?["file"] as? String == "-")
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
        try Data(#"{"users": {"u1": {"username": "a"}, "u2": {"username": tru}}}"#.utf8).write(to: URL(fileURLWithPath: broken))
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
        let aborted = try AdminProcess.run(["--db", database.conninfo, "import", "-", "--rejects", rejects], input: input)
        #expect(aborted.status == 1)
        #expect(aborted.stderr.contains("rejected /a/bad.key: key contains '.'"))
        #expect(aborted.stderr.contains("--max-rejects"))

        let run = try AdminProcess.run(
            ["--db", database.conninfo, "import", "-", "--max-rejects", "5", "--rejects", rejects], input: input)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stderr.contains("2 rejected values written to \(rejects)"))
        let lines = try String(contentsOfFile: rejects, encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 2)
        let first = try JSONSerialization.jsonObject(with: Data(lines[0].utf8)) as? [String: Any]
        #expect(first?["path"] as? String == "/a/bad.key")
        #expect(first?["reason"] as? String == "key contains '.', which Firebase forbids in keys")
        #expect((first?["value"] as? [String: Any])?["x"] as? Int == 1)
        let export = try AdminProcess.run(["--db", database.conninfo, "-q", "export", "-"])
        #expect(export.stdout == #"{"a":{"ok":2}}"#)
    }
}
