import Foundation
import PostgresTestSupport
import Testing
import TreeTestSupport

/// Eight consoles at once doing the app's operations on shared users and posts while a ninth runs `check` in a
/// loop: every operation is one transaction that keeps every copy right, so every check must be clean, during
/// the load and after it.
@Suite("Load")
struct LoadTests {
    static let consoles = 8
    static let seconds = 30.0

    @Test func eightConsolesAndACheckerKeepEveryCopyRight() throws {
        let database = try TestPostgres.makeDatabase()
        let directory = try makeTemporaryDirectory("admin-load")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let db = ["--db", database.conninfo]
        let file = directory + "/tree.json"
        #expect(try AdminProcess.run(["-q", "generate", file, "--users", "60", "--seed", "8"]).status == 0)
        #expect(try AdminProcess.run(db + ["-q", "import", file]).status == 0)
        // The app's per-launch member hashes are the one thing a clean generated tree fails.
        #expect(try AdminProcess.run(db + ["-q", "rehash", "chats"]).status == 0)
        let tree = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: file))) as? [String: Any])
        let uids = try #require((tree["users"] as? [String: Any])?.keys.sorted())
        let posts = ((tree["posts"] as? [String: [String: Any]]) ?? [:]).values.flatMap(\.keys).sorted()
        #expect(uids.count == 60 && posts.count > 50)

        // Chats between fixed pairs, whose follows no console undoes, so that every message may be sent.
        let chatPairs = (0..<8).map { (uids[2 * $0], uids[2 * $0 + 1]) }
        let pairFollows = chatPairs.flatMap { ["follow \($0.0) \($0.1)", "follow \($0.1) \($0.0)"] }.joined(
            separator: "\n")
        #expect(try AdminProcess.run(db + ["-q"], input: pairFollows + "\n").status == 0)
        let others = Array(uids[16...])

        let started = Date()
        let deadline = started.addingTimeInterval(Self.seconds)
        var workers: [(process: Process, errors: Pipe, commands: () -> Int)] = []
        for console in 0..<Self.consoles {
            let (process, input, output, errors) = try AdminProcess.start(db + ["-q", "--on-error", "continue"])
            let written = Counter()
            // Discard the results; keep the pipe drained.
            Thread { _ = output.fileHandleForReading.readDataToEndOfFile() }.start()
            Thread {
                var random = SeededGenerator(state: UInt64(console) + 1)
                func pick<T>(_ values: [T]) -> T { values[Int(random.next() % UInt64(values.count))] }
                while Date() < deadline {
                    let command: String
                    switch random.next() % 6 {
                    case 0: command = "like \(pick(uids)) \(pick(posts))"
                    case 1: command = "unlike \(pick(uids)) \(pick(posts))"
                    case 2, 3:
                        let follower = pick(others)
                        let followee = pick(uids.filter { $0 != follower })
                        command = "\(random.next() % 2 == 0 ? "follow" : "unfollow") \(follower) \(followee)"
                    case 4:
                        command =
                            "post create \(pick(uids)) --image-url https://example.com/\(random.next() % 1000).jpg --image-height 375"
                    default:
                        let (a, b) = pick(chatPairs)
                        command =
                            random.next() % 2 == 0
                            ? "chat send --from \(a) --to \(b) hi from \(console)"
                            : "chat send --from \(b) --to \(a) '¿qué tal? \"; DROP TABLE users; --'"
                    }
                    input.fileHandleForWriting.write(Data((command + "\n").utf8))
                    written.add()
                }
                try? input.fileHandleForWriting.close()
            }.start()
            workers.append((process, errors, { written.value }))
        }
        // The ninth console: check in a loop for as long as the others run.
        var checks = 0
        var dirtyChecks: [String] = []
        while Date() < deadline {
            let run = try AdminProcess.run(db + ["check", "--quiet"])
            checks += 1
            if run.status != 0 { dirtyChecks.append("exit \(run.status): \(run.stdout) \(run.stderr)") }
        }
        var errors: [String] = []
        for worker in workers {
            let text = String(decoding: worker.errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            worker.process.waitUntilExit()
            errors += text.split(separator: "\n").map(String.init)
            #expect(worker.process.terminationStatus == 0 || !errors.isEmpty)
        }
        // The consoles finish what was written to them by the deadline; the rate counts until the last is done.
        let elapsed = Date().timeIntervalSince(started)
        let operations = workers.reduce(0) { $0 + $1.commands() }
        print(
            "load: \(Self.consoles) consoles ran \(operations) operations in \(String(format: "%.1f", elapsed)) s "
                + "(\(Int(Double(operations) / elapsed))/s) while \(checks) checks ran; errors: \(errors.count)")
        #expect(errors.isEmpty, "\(errors.prefix(10).joined(separator: "\n"))")
        #expect(dirtyChecks.isEmpty, "\(dirtyChecks.prefix(3).joined(separator: "\n"))")
        #expect(checks >= 3 && operations >= 8 * 20)
        let final = try AdminProcess.run(db + ["check", "--quiet"])
        #expect(final.status == 0, "\(final.stdout)")
    }
}

/// A count shared with a writer thread.
private final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    var value: Int { lock.withLock { count } }
    func add() { lock.withLock { count += 1 } }
}
