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

/// What a program prints on stdout.
func spawnOutput(_ program: String, _ arguments: [String]) throws -> String {
    let path = NSTemporaryDirectory() + "admin-bench-output-\(getpid())"
    defer { try? FileManager.default.removeItem(atPath: path) }
    _ = try spawn(program, arguments, stdout: path)
    return try String(contentsOfFile: path, encoding: .utf8)
}
