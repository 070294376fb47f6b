import Foundation
import PostgresTestSupport
import Testing

private let tree = #"{"users": {"alice": {"username": "alice"}, "bob": {"username": "bob"}}, "zz": [1, 2]}"#

@Suite("verify command")
struct VerifyCommandTests {
    @Test func equalExitsZeroDifferentThreeWithEachFormat() throws {
        let database = try TestPostgres.makeDatabase()
        let imported = try AdminProcess.run(["--db", database.conninfo, "-q", "import", "-"], input: tree)
        #expect(imported.status == 0, "\(imported.stderr)")
        let equal = try AdminProcess.run(["--db", database.conninfo, "verify", "-"], input: tree)
        #expect(equal.status == 0, "\(equal.stderr)")
        #expect(equal.stderr.contains("are equal"))
        // The summary is a diagnostic: stdout holds no more than the data (nothing, when they are equal).
        #expect(equal.stdout.isEmpty, "\(equal.stdout)")

        let changed = #"{"users": {"alice": {"username": "Alice"}}, "zz": {"0": 1.0, "1": 2}, "zzz": true}"#
        let table = try AdminProcess.run(["--db", database.conninfo, "verify", "-"], input: changed)
        #expect(table.status == 3)
        #expect(table.stdout.contains(#" /users/alice/username | changed | "Alice" | "alice""#), "\(table.stdout)")
        #expect(table.stdout.contains(" /users/bob            | extra   |         | {\"username\":\"bob\"}"))
        #expect(table.stdout.contains(" /zzz                  | missing | true    |"))
        #expect(table.stderr.contains("differs from - in 3 places"))

        let json = try AdminProcess.run(["--db", database.conninfo, "verify", "-", "--format", "json"], input: changed)
        #expect(json.status == 3)
        let document = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        #expect(document["equal"] as? Bool == false)
        let differences = try #require(document["differences"] as? [[String: Any]])
        #expect(differences.map { $0["kind"] as? String } == ["changed", "extra", "missing"])
        #expect((differences[1]["store"] as? [String: Any])?["username"] as? String == "bob")

        let onePath = try AdminProcess.run(
            ["--db", database.conninfo, "verify", "-", "--path", "/users/bob"], input: #"{"username": "bob"}"#)
        #expect(onePath.status == 0, "\(onePath.stdout)\(onePath.stderr)")
        // Counts by node name the children of the verified node by their whole path.
        let underPath = try AdminProcess.run(
            ["--db", database.conninfo, "verify", "-", "--path", "/users"], input: #"{"alice": {"username": "Al"}}"#)
        #expect(underPath.status == 3)
        #expect(underPath.stderr.contains("under /users/alice: 1, /users/bob: 1;"), "\(underPath.stderr)")

    }

    /// An export a script wrote, keys in insertion or byte order, from a file or a pipe: sorted, then compared.
    @Test func keysInAnyOrderFromAFileOrAPipe() throws {
        let database = try TestPostgres.makeDatabase()
        let imported = try AdminProcess.run(["--db", database.conninfo, "-q", "import", "-"], input: tree)
        #expect(imported.status == 0, "\(imported.stderr)")
        let scripted =
            #"{"zz": {"1": 2, "0": 1}, "users": {"bob": {"username": "bob"}, "alice": {"username": "alice"}}}"#
        let piped = try AdminProcess.run(["--db", database.conninfo, "verify", "-"], input: scripted)
        #expect(piped.status == 0, "\(piped.stdout)\(piped.stderr)")
        #expect(piped.stderr.contains("- was sorted first"), "\(piped.stderr)")
        #expect(piped.stderr.contains("keys not in RTDB order; sorting what is out of order"), "\(piped.stderr)")

        let file = FileManager.default.temporaryDirectory.appendingPathComponent("verify-\(UUID()).json")
        defer { try? FileManager.default.removeItem(at: file) }
        try Data(scripted.replacingOccurrences(of: "alice\"}}", with: "Al\"}}").utf8).write(to: file)
        let changed = try AdminProcess.run(["--db", database.conninfo, "-q", "verify", file.path, "--format", "json"])
        #expect(changed.status == 3, "\(changed.stderr)")
        let document = try #require(try JSONSerialization.jsonObject(with: Data(changed.stdout.utf8)) as? [String: Any])
        let differences = try #require(document["differences"] as? [[String: Any]])
        #expect(differences.map { $0["path"] as? String } == ["/users/alice/username"])
        let summary = try #require(document["summary"] as? [String: Any])
        #expect((summary["sorted_because"] as? String)?.contains(#""0" comes after "1" in /zz"#) == true)
        #expect(changed.stderr.contains("differs from \(file.path) in 1 place"), "\(changed.stderr)")

        let sorted = try AdminProcess.run(["--db", database.conninfo, "verify", "--sort", "-"], input: scripted)
        #expect(sorted.status == 0, "\(sorted.stderr)")
        #expect(sorted.stderr.contains("- was sorted first (--sort)."), "\(sorted.stderr)")
    }
}
