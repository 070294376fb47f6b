import Foundation
import PostgresTestSupport
import Testing

@Suite("generate command")
struct GenerateCommandTests {
    @Test func theManifestIsWhatCheckThenReports() throws {
        let database = try TestPostgres.makeDatabase()
        let directory = try makeTemporaryDirectory("admin-gen")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let tree = directory + "/broken.json.gz", manifest = directory + "/broken.manifest.json"
        let generated = try AdminProcess.run([
            "generate", tree, "--users", "250", "--seed", "4", "--anomalies", "--manifest", manifest,
        ])
        #expect(generated.status == 0, "\(generated.stderr)")
        #expect(generated.stdout.isEmpty)
        #expect(generated.stderr.contains("Generated 250 users (makestagram, seed 4): "))
        #expect(generated.stderr.contains("check will find: like_count "))
        for file in [tree, manifest] {
            let mode = try FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? Int
            #expect(mode == 0o600, "\(file)")
        }

        let imported = try AdminProcess.run(["--db", database.conninfo, "import", tree])
        #expect(imported.status == 0, "\(imported.stderr)")
        let check = try AdminProcess.run(["--db", database.conninfo, "check", "--format", "json", "--examples", "100"])
        #expect(check.status == 3)
        let expected =
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: manifest))) as? NSDictionary
        let found = try JSONSerialization.jsonObject(with: Data(check.stdout.utf8)) as? NSDictionary
        // The same checks, counts and examples; only a run has durations.
        let untimed = (found?["checks"] as? [[String: Any]])?.map { $0.filter { $0.key != "seconds" } as NSDictionary }
        #expect(expected?["checks"] as? [NSDictionary] == untimed)
        #expect(expected?["ok"] as? Bool == false)
        #expect(expected?["users"] as? Int == 250)
        let nodes = expected?["nodes"] as? [String: Int]
        #expect(nodes?["users"] == 250)
        #expect(
            nodes.map { Array($0.keys).sorted() } == [
                "chats", "followers", "following", "messages", "postLikes", "posts", "timeline", "users",
            ])

        // An existing file is kept unless --force.
        let again = try AdminProcess.run(["generate", tree, "--users", "10"])
        #expect(again.status == 1)
        #expect(again.stderr.contains("exists; use --force"))
    }

    @Test func stdoutGivesTheSameBytesAsAFile() throws {
        let directory = try makeTemporaryDirectory("admin-gen")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = try AdminProcess.run([
            "generate", directory + "/feed.json", "--users", "40", "--dialect", "appcoda", "--pretty",
        ])
        #expect(file.status == 0, "\(file.stderr)")
        let stdout = try AdminProcess.run(["-q", "generate", "-", "--users", "40", "--dialect", "appcoda", "--pretty"])
        #expect(stdout.status == 0)
        #expect(stdout.stderr.isEmpty)
        #expect(stdout.stdout == (try String(contentsOfFile: directory + "/feed.json", encoding: .utf8)))
        #expect(stdout.stdout.hasPrefix("{\n  \"posts\" : {\n    \"-"))
        #expect(stdout.stdout.contains("\"imageFileURL\" : \"https://firebasestorage.googleapis.com/"))
    }

    @Test func badOptionsAreUsageErrors() throws {
        for (arguments, message) in [
            (["generate", "x.json", "--users", "0"], "--users must be between 1 and"),
            (
                ["generate", "x.json", "--users", "5", "--dialect", "appcoda", "--anomalies"],
                "defined on the makestagram tree"
            ),
            (["generate", "x.json"], "Missing expected argument '--users <users>'"),
            (["generate", "x.json", "--users", "5", "--dialect", "parse"], "--dialect"),
        ] {
            let run = try AdminProcess.run(arguments)
            #expect(run.status == 64, "\(arguments)")
            #expect(run.stderr.contains(message), "\(run.stderr)")
            #expect(!FileManager.default.fileExists(atPath: "x.json"))
        }
    }
}
