import Foundation
import PostgresTestSupport
import Testing

private let tree = #"{"cfg": {"n": 1}, "users": {"alice": {"username": "alice"}}}"#

/// The write verbs, get and verify hold to Firebase's rules from a script, where nobody can be asked.
@Suite("Firebase's rules at the console")
struct FirebaseRulesTests {
    @Test(arguments: [
        ["set", "/", "null"], ["remove", "/"], ["set", "/", "{}"], ["update", "/", #"{"cfg": null, "users": null}"#],
    ])
    func aWriteThatEmptiesTheStoreNeedsLeave(_ command: [String]) throws {
        let database = try databaseHolding(tree)
        let refused = try AdminProcess.run(["--db", database.conninfo] + command)
        #expect(refused.status == 1, "\(refused.stderr)")
        #expect(refused.stderr.contains("this write would delete everything the store holds"), "\(refused.stderr)")
        #expect(refused.stderr.contains("--allow-empty (or --yes)"), "\(refused.stderr)")
        let kept = try AdminProcess.run(["--db", database.conninfo, "export", "-", "-q"])
        #expect(kept.stdout == #"{"cfg":{"n":1},"users":{"alice":{"username":"alice"}}}"#)

        let allowed = try AdminProcess.run(["--db", database.conninfo] + command + ["--allow-empty"])
        #expect(allowed.status == 0, "\(allowed.stderr)")
        // Every row the store held is counted, though a whole-tree write truncates rather than deleting them.
        #expect(allowed.stderr.contains("rows written, 2 rows removed."), "\(allowed.stderr)")
        let emptied = try AdminProcess.run(["--db", database.conninfo, "export", "-", "-q"])
        #expect(emptied.stdout == "null")
    }

    /// A write below the root that takes the store's last rows needs leave too: the refusal is decided by what
    /// the write removed, so every way of removing the last leaf or record must count its rows.
    @Test(arguments: [
        (#"{"cfg":{"n":1}}"#, ["remove", "/cfg"]), (#"{"cfg":{"n":1}}"#, ["set", "/cfg/n", "null"]),
        (#"{"cfg":{"n":1}}"#, ["update", "/", #"{"cfg": null}"#]), (#"{"cfg":1}"#, ["set", "/cfg/x", "null"]),
        (#"{"users":{"alice":{"username":"alice"}}}"#, ["remove", "/users/alice"]),
        (#"{"users":{"alice":{"username":"alice"}}}"#, ["set", "/users/alice/username", "null"]),
        (#"{"postLikes":{"p":{"alice":true}}}"#, ["update", "/postLikes/p", #"{"alice": null}"#]),
    ])
    func aWriteBelowTheRootThatEmptiesTheStoreNeedsLeave(held: String, command: [String]) throws {
        let database = try databaseHolding(held)  // compact, as export writes it
        let refused = try AdminProcess.run(["--db", database.conninfo] + command)
        if command == ["set", "/cfg/x", "null"] {
            // Nothing at /cfg/x: nothing removed, and the leaf at /cfg stays.
            #expect(refused.status == 0, "\(refused.stderr)")
            #expect(try AdminProcess.run(["--db", database.conninfo, "export", "-", "-q"]).stdout == held)
            return
        }
        #expect(refused.status == 1, "\(refused.stderr)")
        #expect(refused.stderr.contains("this write would delete everything the store holds"), "\(refused.stderr)")
        #expect(try AdminProcess.run(["--db", database.conninfo, "export", "-", "-q"]).stdout == held)
        let allowed = try AdminProcess.run(["--db", database.conninfo] + command + ["--allow-empty"])
        #expect(allowed.status == 0, "\(allowed.stderr)")
        #expect(try AdminProcess.run(["--db", database.conninfo, "export", "-", "-q"]).stdout == "null")
    }

    @Test func pushPrintsTheNewChildsPathAtTheRootAndInsideARecord() throws {
        let database = try databaseHolding(tree)
        for (parent, prefix) in [("/", "/"), ("/users/alice", "/users/alice/")] {
            let push = try AdminProcess.run(["--db", database.conninfo, "push", parent, #"{"x": 1}"#])
            #expect(push.status == 0, "\(push.stderr)")
            #expect(!push.stderr.contains("Can't read a value"), "\(push.stderr)")
            let path = push.stdout.trimmingCharacters(in: .newlines)
            #expect(path.hasPrefix(prefix) && path.dropFirst(prefix.count).count == 20, "\(path)")
            let read = try AdminProcess.run(["--db", database.conninfo, "get", path])
            #expect(read.stdout == "{\"x\":1}\n", "\(path): \(read.stdout)\(read.stderr)")
        }
    }

    @Test func updateTakesAnObjectWhoseKeysMayBePaths() throws {
        let database = try databaseHolding(tree)
        for value in ["5", #""str""#, "[1]", "null"] {
            let refused = try AdminProcess.run(["--db", database.conninfo, "update", "/cfg/n", value])
            #expect(refused.status == 1, "\(value): \(refused.stderr)")
            #expect(refused.stderr.contains("an update takes a JSON object"), "\(refused.stderr)")
        }
        let paths = try AdminProcess.run(
            ["--db", database.conninfo, "update", "/", #"{"users/alice/username": "al", "cfg/m": 2}"#])
        #expect(paths.status == 0, "\(paths.stderr)")
        // Only the user's row is replaced (the record is rewritten); nothing else is counted as removed.
        #expect(paths.stderr.contains("/: 2 rows written, 1 row removed."), "\(paths.stderr)")
        let overlapping = try AdminProcess.run(
            ["--db", database.conninfo, "update", "/", #"{"cfg": {"k": 1}, "cfg/k": 2}"#])
        #expect(overlapping.status == 1)
        #expect(overlapping.stderr.contains(#"the update's keys "cfg" and "cfg/k" overlap"#), "\(overlapping.stderr)")
        let export = try AdminProcess.run(["--db", database.conninfo, "export", "-", "-q"])
        #expect(export.stdout == #"{"cfg":{"m":2,"n":1},"users":{"alice":{"username":"al"}}}"#)
    }

    @Test func verifyReadsEmptyObjectsAndRejectsAsImportDoes() throws {
        let database = try databaseHolding(#"{"c": 1}"#)
        for file in [#"{"a": {"b": {}}, "c": 1}"#, #"{"x": [{}], "c": 1}"#, #"{"c": 1, "x": [{}]}"#] {
            let equal = try AdminProcess.run(["--db", database.conninfo, "verify", "-"], input: file)
            #expect(equal.status == 0, "\(file): \(equal.stdout)\(equal.stderr)")
        }
        let rejected = try AdminProcess.run(
            ["--db", database.conninfo, "verify", "-", "--format", "csv"],
            input: #"{"c": 1, "d": 1e400, "e": {"f$": 2}}"#)
        #expect(rejected.status == 3, "\(rejected.stderr)")
        #expect(
            rejected.stdout.contains("/d,rejected,1e400 (a number outside the range of a double),"),
            "\(rejected.stdout)")
        #expect(rejected.stdout.contains(#"/e/f$,rejected,"2 (key contains '$'"#), "\(rejected.stdout)")
        #expect(!rejected.stdout.contains("missing"), "\(rejected.stdout)")
    }

    @Test func getRefusesAnEqualToBesideARange() throws {
        let database = try databaseHolding(tree)
        for range in [["--start-at", "1"], ["--end-at", "1"]] {
            let run = try AdminProcess.run(
                ["--db", database.conninfo, "get", "/users", "--order-by-key", "--equal-to", "1"] + range)
            #expect(run.status == 64, "\(run.stderr)")
            #expect(run.stderr.contains("--equal-to sets both ends of the range"), "\(run.stderr)")
        }
    }
}
