import Foundation
import PostgresTestSupport
import Testing

/// Alice follows bob and they share chat -Ch1; carol follows nobody.
private let chatTree = """
    {"users": {"alice": {"username": "alice"}, "bob": {"username": "bob"}, "carol": {"username": "carol"}},
     "following": {"alice": {"bob": true}}, "followers": {"bob": {"alice": true}},
     "chats": {"alice": {"-Ch1": {"title": "alice, bob", "members": {"alice": true, "bob": true},
                                  "lastMessage": "bob: hi", "lastMessageSent": 1500000020}},
               "bob": {"-Ch1": {"title": "alice, bob", "members": {"alice": true, "bob": true},
                                "lastMessage": "bob: hi", "lastMessageSent": 1500000020}}},
     "messages": {"-Ch1": {"-M1": {"content": "hi", "timestamp": 1500000020, "sender": {"uid": "bob", "username": "bob"}}}}}
    """

@Suite("chat commands")
struct ChatCommandTests {
    private func chatDatabase() throws -> TestDatabase {
        try databaseHolding(chatTree)
    }

    @Test func oneConsoleFollowsWhatAnotherSends() throws {
        let database = try chatDatabase()
        let (follower, _, output, errors) = try AdminProcess.start([
            "--db", database.conninfo, "messages", "-Ch1", "--follow",
        ])
        // A stuck follower must not hang the test run.
        let watchdog = Thread {
            Thread.sleep(forTimeInterval: 60)
            if follower.isRunning { kill(follower.processIdentifier, SIGKILL) }
        }
        watchdog.start()
        var diagnostics = Data()
        #expect(
            errors.fileHandleForReading.read(until: "Ctrl-C to stop", into: &diagnostics).contains(
                "Following chat -Ch1"))

        let script = """
            chat send --from alice --to bob one
            chat send --from alice --to bob "two, with a comma"
            chat send --from alice --to bob three
            """
        let sender = try AdminProcess.run(["--db", database.conninfo, "-q", "-f", "-"], input: script)
        #expect(sender.status == 0, "\(sender.stderr)")

        var received = Data()
        _ = output.fileHandleForReading.read(until: "alice: three\n", into: &received)
        follower.interrupt()
        received.append(output.fileHandleForReading.readDataToEndOfFile())
        follower.waitUntilExit()
        diagnostics.append(errors.fileHandleForReading.readDataToEndOfFile())
        #expect(follower.terminationStatus == 0, "\(String(decoding: diagnostics, as: UTF8.self))")
        let lines = String(decoding: received, as: UTF8.self).split(separator: "\n")
        #expect(
            lines.map { $0.split(separator: "  ", maxSplits: 1).last.map(String.init) }
                == ["alice: one", "alice: two, with a comma", "alice: three"])
    }

    @Test func sendOpenAndListFromTheCommandLine() throws {
        let database = try chatDatabase()
        let send = try AdminProcess.run([
            "--db", database.conninfo, "chat", "send", "--from", "alice", "--to", "bob", "see", "you", "--format",
            "json",
        ])
        #expect(send.status == 0, "\(send.stderr)")
        #expect(send.stdout.contains(#""chat": "-Ch1", "created_chat": false"#))
        #expect(send.stdout.contains(#""last_message": "alice: see you""#))

        let open = try AdminProcess.run(["--db", database.conninfo, "chat", "open", "bob", "alice", "--format", "json"])
        #expect(open.status == 0)
        #expect(open.stdout.contains(#""last_message": "alice: see you""#))
        #expect(open.stdout.contains(#""stable_hash": false"#))

        let chats = try AdminProcess.run(["--db", database.conninfo, "chats", "bob", "--format", "csv"])
        #expect(chats.stdout.split(separator: "\n").count == 2)
        let messages = try AdminProcess.run(["--db", database.conninfo, "messages", "-Ch1", "--format", "csv"])
        #expect(
            messages.stdout.split(separator: "\n").map { $0.split(separator: ",").last } == [
                "content", "hi", "see you",
            ])
    }

    @Test func refusalsAndUsageErrorsExitAsDocumented() throws {
        let database = try chatDatabase()
        let cases: [([String], Int32, String)] = [
            (["chat", "open", "alice", "carol"], 1, "no chat between alice and carol"),
            (["chat", "send", "--from", "bob", "--to", "alice", "hi"], 1, "bob does not follow alice"),
            (["chat", "send", "--from", "alice", "--to", "alice", "hi"], 1, "cannot message themselves"),
            (["chat", "send", "--from", "alice", "--to", "bob", ""], 1, "the message is empty"),
            (["chat", "send", "--from", "alice", "--to", "bob"], 64, "missing TEXT"),
            (["messages"], 64, "Missing expected argument '<chat-key>'"),
            (["messages", "-Nope"], 1, "no chat -Nope"),
            (["chat", "merge", "-Ch1"], 64, "missing DROP (or --all)"),
            (["chat", "merge", "-Ch1", "-Nope", "--dry-run"], 1, "no chat -Nope"),
        ]
        for (arguments, status, message) in cases {
            let run = try AdminProcess.run(["--db", database.conninfo] + arguments)
            #expect(run.status == status, "\(arguments)")
            #expect(run.stderr.contains(message), "\(arguments): \(run.stderr)")
        }
    }
}
