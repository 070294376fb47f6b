import Foundation
import PostgresClient
import Storage

/// `mirror`: what applying Firebase's change feed costs. The first put of a connection (the whole generated
/// export of `megabytes` MB as one event, on a store that already holds it: a reconnect) beside `admin sync` and
/// `admin import` of the same file; then streams of one-leaf patches, on a plain node and on typed records
/// (users' usernames), in events per second. Each row: wall seconds (median of `runs`) and peak RSS.
struct MirrorBenchmark {
    let file: String
    let patches: Int
    let runs: Int
    let work: String

    /// The export as one `put` event (its line breaks, which JSON allows only between tokens, made spaces).
    private func writeStreams(users: [String]) throws {
        var bytes = [UInt8]("event: put\ndata: {\"path\": \"/\", \"data\": ".utf8)
        bytes += try Data(contentsOf: URL(fileURLWithPath: file)).map { $0 == 0x0A || $0 == 0x0D ? 0x20 : $0 }
        bytes += Array("}\n\n".utf8)
        try Data(bytes).write(to: URL(fileURLWithPath: work + "/first-put.txt"))
        var plain = "event: put\ndata: {\"path\": \"/\", \"data\": {\"n\": 0}}\n\n"
        for index in 0..<patches {
            plain += "event: patch\ndata: {\"path\": \"/\", \"data\": {\"k\(index % 1000)\": \(index)}}\n\n"
        }
        try plain.write(toFile: work + "/plain.txt", atomically: true, encoding: .utf8)
        // Typed records: the first put is /users as the store has it, then each patch renames a user.
        let exported = try spawnOutput(adminBinary(), ["--db", conninfo, "-q", "export", "-", "--path", "/users"])
        var typed = "event: put\ndata: {\"path\": \"/\", \"data\": " + exported + "}\n\n"
        for index in 0..<patches {
            let uid = users[index % users.count]
            typed += "event: patch\ndata: {\"path\": \"/\(uid)\", \"data\": {\"username\": \"renamed \(index)\"}}\n\n"
        }
        try typed.write(toFile: work + "/typed.txt", atomically: true, encoding: .utf8)
    }

    var conninfo = ""

    mutating func run() throws {
        try? FileManager.default.removeItem(atPath: work)
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        let (cluster, _, conninfo) = try openBenchmarkServer(work: work + "/server")
        self.conninfo = conninfo
        defer { cluster.close() }
        let admin = adminBinary()
        let db = ["--db", conninfo, "-q"]
        _ = try spawn(admin, db + ["migrate"])
        _ = try spawn(admin, db + ["import", file, "--yes"])
        let connection = try Connection(conninfo: conninfo)
        let users = try connection.query("SELECT uid FROM users ORDER BY uid LIMIT 1000").map {
            try $0.decode(String.self, at: 0)
        }
        try writeStreams(users: users)
        var rows: [String: [Measurement]] = [:]
        for _ in 0..<runs {
            try quiesce(conninfo)
            rows["mirror: first put, nothing changed", default: []].append(
                try spawn(admin, db + ["mirror", work + "/first-put.txt", "--temp-dir", work]))
            try quiesce(conninfo)
            rows["sync of the same file", default: []].append(
                try spawn(admin, db + ["sync", file, "--yes", "--temp-dir", work]))
            try quiesce(conninfo)
            rows["import of the same file", default: []].append(try spawn(admin, db + ["import", file, "--yes"]))
            try quiesce(conninfo)
            rows["mirror: \(patches) one-leaf patches, plain node", default: []].append(
                try spawn(admin, db + ["mirror", work + "/plain.txt", "--at", "/bench"]))
            try quiesce(conninfo)
            rows["mirror: \(patches) one-leaf patches, typed records", default: []].append(
                try spawn(admin, db + ["mirror", work + "/typed.txt", "--at", "/users"]))
        }
        for rate in [100, 200, 500] {
            let latency = try mirrorLatency(conninfo: conninfo, rate: rate, seconds: 10)
            print(
                "latency at \(rate) events/s for 10 s (ms): p50 \(String(format: "%.1f", latency.p50)), "
                    + "p99 \(String(format: "%.1f", latency.p99)), max \(String(format: "%.1f", latency.max))")
        }
        print("input: \(file), \(format(Double(fileSize(file)) / 1_000_000)) MB; \(runs) runs each, the median")
        print("| work | seconds | ratio | events/s | peak RSS MB |")
        print("|---|---|---|---|---|")
        func seconds(_ name: String) -> Double { median(rows[name]!.map(\.seconds)) }
        for name in [
            "mirror: first put, nothing changed", "sync of the same file", "import of the same file",
            "mirror: \(patches) one-leaf patches, plain node", "mirror: \(patches) one-leaf patches, typed records",
        ] {
            let ratio =
                name.hasPrefix("mirror: first")
                ? String(
                    format: "%.2f× sync, %.2f× import", seconds(name) / seconds("sync of the same file"),
                    seconds(name) / seconds("import of the same file")) : ""
            let rate = name.contains("patches") ? String(format: "%.0f", Double(patches + 1) / seconds(name)) : ""
            print(
                "| \(name) | \(String(format: "%.2f", seconds(name))) | \(ratio) | \(rate) "
                    + "| \(format(rows[name]!.map(\.peakMB).max()!)) |")
        }
    }
}

/// Latency from writing an event into `admin mirror -`'s stdin to its commit, with events sent at `rate` a second
/// for `seconds`: each a patch adding one leaf under /latency, so that the count of its leaves is the number of
/// events committed, which a second connection reads every 2 ms. The milliseconds at the 50th, 99th percentile
/// and the largest, and the events per second applied.
func mirrorLatency(conninfo: String, rate: Int, seconds: Int) throws -> (p50: Double, p99: Double, max: Double) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: adminBinary())
    let root = "latency\(rate)"
    process.arguments = ["--db", conninfo, "-q", "mirror", "-", "--at", "/" + root, "--allow-empty"]
    let input = Pipe()
    process.standardInput = input
    try process.run()
    let writer = input.fileHandleForWriting
    writer.write(Data("event: put\ndata: {\"path\": \"/\", \"data\": null}\n\n".utf8))
    let total = rate * seconds
    let clock = ContinuousClock()
    let start = clock.now
    var sent: [ContinuousClock.Instant] = []
    sent.reserveCapacity(total)
    let commits = CommitLog()
    let watcher = Thread {
        guard let connection = try? Connection(conninfo: conninfo) else { return }
        var last = 0
        while last < total {
            let count =
                (try? connection.query("SELECT count(*) FROM unmapped_values WHERE root = \(root)")[0].decode(
                    Int.self, at: 0)) ?? last
            if count > last {
                commits.append(count, at: clock.now)
                last = count
            }
            Thread.sleep(forTimeInterval: 0.002)
        }
    }
    watcher.start()
    for index in 0..<total {
        let due = start + .seconds(Double(index) / Double(rate))
        if clock.now < due { Thread.sleep(forTimeInterval: inSeconds(clock.now.duration(to: due))) }
        sent.append(clock.now)
        writer.write(Data("event: patch\ndata: {\"path\": \"/\", \"data\": {\"k\(index)\": \(index)}}\n\n".utf8))
    }
    while commits.entries.last?.count ?? 0 < total { Thread.sleep(forTimeInterval: 0.01) }
    writer.closeFile()
    process.waitUntilExit()
    var latencies: [Double] = []
    let seen = commits.entries
    var next = 0
    for (index, at) in sent.enumerated() {
        while next < seen.count, seen[next].count < index + 1 { next += 1 }
        guard next < seen.count else { break }
        latencies.append(inSeconds(at.duration(to: seen[next].at)) * 1000)
    }
    latencies.sort()
    func percentile(_ p: Double) -> Double { latencies[min(latencies.count - 1, Int(Double(latencies.count) * p))] }
    return (percentile(0.5), percentile(0.99), latencies.last ?? 0)
}

/// A duration in seconds.
private func inSeconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}

/// Counts of committed events and when they were seen, shared between the watching thread and the sender.
final class CommitLog: @unchecked Sendable {
    private let lock = NSLock()
    private var seen: [(count: Int, at: ContinuousClock.Instant)] = []

    func append(_ count: Int, at instant: ContinuousClock.Instant) {
        lock.withLock { seen.append((count, instant)) }
    }

    var entries: [(count: Int, at: ContinuousClock.Instant)] { lock.withLock { seen } }
}

/// What a program prints on stdout.
func spawnOutput(_ program: String, _ arguments: [String]) throws -> String {
    let path = NSTemporaryDirectory() + "admin-bench-output-\(getpid())"
    defer { try? FileManager.default.removeItem(atPath: path) }
    _ = try spawn(program, arguments, stdout: path)
    return try String(contentsOfFile: path, encoding: .utf8)
}
