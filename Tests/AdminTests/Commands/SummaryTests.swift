import Foundation
import PostgresTestSupport
import Testing

/// The lines that sum a command up say what happened: no "0 bytes" given back by a vacuum that gave nothing,
/// the chats a merge kept and dropped, no durations of 0.000 s and no binary noise in numbers, did-you-mean
/// for a shortened check name, and on a terminal no summary said twice.
@Suite("summaries")
struct SummaryTests {
    /// Two chats of alice and bob, one of alice and carol.
    private static let duplicateChats = """
        {"users": {"alice": {"username": "alice"}, "bob": {"username": "bob"}, "carol": {"username": "carol"}},
         "chats": {"alice": {"-Ch1": {"members": {"alice": true, "bob": true}},
                             "-Ch2": {"members": {"alice": true, "bob": true}},
                             "-Ch3": {"members": {"alice": true, "carol": true}}},
                   "bob": {"-Ch1": {"members": {"alice": true, "bob": true}},
                           "-Ch2": {"members": {"alice": true, "bob": true}}},
                   "carol": {"-Ch3": {"members": {"alice": true, "carol": true}}}},
         "messages": {"-Ch1": {"-M1": {"content": "hi", "timestamp": 1, "sender": {"uid": "bob", "username": "bob"}}},
                      "-Ch2": {"-M2": {"content": "yo", "timestamp": 2, "sender": {"uid": "alice", "username": "alice"}},
                               "-M3": {"content": "ok", "timestamp": 3, "sender": {"uid": "bob", "username": "bob"}}}}}
        """

    @Test func chatMergeAllNamesTheChatsItKeptAndDropped() throws {
        let database = try databaseHolding(Self.duplicateChats)
        let dryRun = try AdminProcess.run(["--db", database.conninfo, "chat", "merge", "--all", "--dry-run"])
        #expect(dryRun.status == 0, "\(dryRun.stderr)")
        #expect(dryRun.stdout.contains(" -Ch2 | -Ch1    | alice, bob |              1"), "\(dryRun.stdout)")
        #expect(dryRun.stderr.contains("chat merge: dry run, would merge 1 chat into 1 ("), "\(dryRun.stderr)")

        let json = try AdminProcess.run([
            "--db", database.conninfo, "chat", "merge", "--all", "--keep", "oldest", "--format", "json",
        ])
        let report = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        let merged = try #require(report["merged"] as? [[String: Any]])
        #expect(merged.count == 1)
        #expect(merged.first?["kept"] as? String == "-Ch1")
        #expect(merged.first?["dropped"] as? String == "-Ch2")
        #expect(merged.first?["members"] as? [String] == ["alice", "bob"])
        #expect(merged.first?["messages_moved"] as? Int == 2)

        // Nothing left to merge: said in a line, not as an empty table.
        let again = try AdminProcess.run(["--db", database.conninfo, "chat", "merge", "--all"])
        #expect(again.status == 0)
        #expect(again.stdout.isEmpty, "\(again.stdout)")
        #expect(again.stderr == "No duplicate chats: nothing to merge.\n")
    }

    /// The summary agrees with the table: what shrank is given back, what grew is said to have grown, and
    /// nothing is "0 bytes given back". (How much VACUUM can give back depends on other sessions' snapshots, so
    /// the test holds the summary to the sizes rather than to a figure.)
    @Test func vacuumSaysWhatItGaveBackOrThatItGaveNothing() throws {
        let users = (0..<3000).map { #""u\#($0)": {"username": "\#(String(repeating: "x", count: 200))"}"# }
        let database = try databaseHolding(#"{"users": {"# + users.joined(separator: ", ") + "}}")
        func expectSummaryAgrees(_ arguments: [String]) throws {
            let run = try AdminProcess.run(["--db", database.conninfo, "vacuum", "--format", "csv"] + arguments)
            #expect(run.status == 0, "\(run.stderr)")
            let changes = run.stdout.split(separator: "\n").dropFirst().map { line in
                let cells = line.split(separator: ",")
                return Int(cells[1])! - Int(cells[2])!
            }
            #expect(changes.count == 12, "\(run.stdout)")
            let freed = changes.filter { $0 > 0 }.reduce(0, +)
            let grown = -changes.filter { $0 < 0 }.reduce(0, +)
            #expect(!run.stderr.contains("Gave back 0 bytes"), "\(run.stderr)")
            #expect(
                run.stderr.hasPrefix(freed > 0 ? "Gave back \(freed) bytes on disk" : "Nothing to give back"),
                "\(run.stderr)")
            #expect(run.stderr.contains("grew by \(grown) bytes") == (grown > 0), "\(run.stderr)")
        }
        try expectSummaryAgrees([])
        let removed = try AdminProcess.run(["--db", database.conninfo, "-q", "remove", "/users", "--yes"])
        #expect(removed.status == 0, "\(removed.stderr)")
        try expectSummaryAgrees(["--full"])
    }

    @Test func durationsAreReadableAndNumbersHaveNoBinaryNoise() throws {
        let generated = try AdminProcess.run(["generate", "-", "--users", "1"])
        #expect(generated.status == 0)
        #expect(generated.stderr.contains("Generated 1 user (makestagram"), "\(generated.stderr)")
        #expect(!generated.stderr.contains(" 0.000 s"), "\(generated.stderr)")
        #expect(generated.stderr.firstMatch(of: /\sin \d+\.\d+ (ms|s) \(/) != nil, "\(generated.stderr)")

        let database = try databaseHolding(Self.duplicateChats)
        for command in [
            ["check", "--format", "json"], ["import", "-", "--dry-run", "--format", "json"],
            ["backfill", "like-counts", "--dry-run", "--format", "json"], ["check", "--record", "--format", "json"],
            ["check", "--history", "--format", "json"],
        ] {
            let run = try AdminProcess.run(["--db", database.conninfo] + command, input: Self.duplicateChats)
            // Seconds to the microsecond at most: no 0.0046386380000000005.
            for match in run.stdout.matches(of: /"seconds": (-?[0-9.e+-]+)/) {
                #expect(match.1.split(separator: ".").last!.count <= 6, "\(command): \(match.0)")
            }
            #expect(run.stdout.contains("\"seconds\""), "\(command): \(run.stdout)")
        }
    }

    @Test func aShortenedCheckNameGetsADidYouMean() throws {
        let run = try AdminProcess.run(["check", "--allow", "chat_dups=3"])
        #expect(run.status == 64)
        #expect(run.stderr.contains(#"no check named "chat_dups"; did you mean "chat_duplicates"? The checks are"#))
    }

    /// A failing check or verify is summed up once, by its error line, at a terminal as in a pipe.
    @Test func aFailureIsSummedUpOnce() throws {
        let database = try databaseHolding(Self.duplicateChats)
        let directory = try makeTemporaryDirectory("admin-summary")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let other = directory + "/other.json"
        try #"{"users": {"alice": {"username": "alice"}}}"#.write(toFile: other, atomically: true, encoding: .utf8)
        let check = try AdminProcess.run(["--db", database.conninfo, "check", "--only", "chat_duplicates"])
        #expect(check.status == 3)
        #expect(!check.stdout.contains("checks found"), "\(check.stdout)")
        #expect(check.stderr == "admin: check: 1 of 1 checks found 1 violation: chat_duplicates\n")
        let verify = try AdminProcess.run(["--db", database.conninfo, "verify", other])
        #expect(verify.status == 3)
        #expect(!verify.stdout.contains("differ"), "\(verify.stdout)")
        #expect(
            verify.stderr.hasPrefix(
                "admin: verify: the store differs from \(other) in 4 places (4 extra) under /chats: 1, /messages: 1, "
                    + "/users: 2; "), "\(verify.stderr)")
        guard Terminal.isAvailable else { return }
        let command = "\(shellQuoted(AdminProcess.executable.path)) --db \(shellQuoted(database.conninfo))"
        let terminal = try Terminal(command, environment: ["TERM": "xterm"])
        #expect(try terminal.waitFor("=>"))
        try terminal.send("check --only chat_duplicates", "Enter")
        #expect(try terminal.waitFor("admin: check: 1 of 1 checks found 1 violation: chat_duplicates"))
        #expect(try terminal.screen().components(separatedBy: "checks found").count == 2)
        try terminal.send("C-d")
    }
}
