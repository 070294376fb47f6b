import Foundation
import PostgresClient
import Storage

/// `large`: the standing table's core at sizes where the other benchmarks' helpers cannot go (evolve_export.py
/// holds the whole export in Python), once per size, each size on a fresh server that is removed afterwards:
/// `admin import` beside `pg_restore -j2` of the same store, `admin export` beside `COPY … TO STDOUT`, `admin
/// verify`, and `admin sync` of the same file after 1 % of the users' subtrees drifted in the store (`drift`),
/// then `admin verify` again, which must find nothing. A 10 GB export makes a store of about 31 GB, and two do not
/// fit beside the file on the project's machines: the dump is restored in the store's place (the store dropped
/// once dumped), and what follows reads the restored store, which holds the same rows, once analyzed and read (its
/// hint bits set, as an import's COPY FREEZE leaves its own). Seconds per GB side by
/// side show whether time is linear in the size, peak RSS whether memory is bounded.
struct LargeBenchmark {
    let files: [String]
    let work: String

    /// One size's figures by operation, and the export's size in MB.
    struct Result {
        var megabytes: Double
        var rows: [String: (measurement: Measurement, walMB: Double)] = [:]
    }

    /// The operations in the order the table lists them, each with its yardstick.
    static let operations: [(name: String, yardstick: String?)] = [
        ("import", "pg_restore"), ("pg_restore", nil), ("export", "COPY TO"), ("COPY TO", nil), ("verify", "export"),
        ("sync 1 % drifted", "import"), ("verify after the sync", "export"),
    ]

    /// 1 % of the users (by a hash of their uid) drift from the file as a day of edits made straight in the store
    /// would: one post's like count and height changed, one of their likes gone, one followed user unfollowed (both
    /// sides), one message they sent gone. The sync puts each back.
    static let drift = """
        BEGIN;
        UPDATE posts p SET like_count = p.like_count + 1, image_height = p.image_height + 1
          FROM (SELECT DISTINCT ON (owner_uid) owner_uid, post_key FROM posts
                 WHERE abs(hashtext(owner_uid)) % 100 = 0 ORDER BY owner_uid, post_key) c
         WHERE p.owner_uid = c.owner_uid AND p.post_key = c.post_key;
        DELETE FROM post_likes l
         USING (SELECT DISTINCT ON (liker_uid) post_key, liker_uid FROM post_likes
                 WHERE abs(hashtext(liker_uid)) % 100 = 0 ORDER BY liker_uid, post_key) c
         WHERE l.post_key = c.post_key AND l.liker_uid = c.liker_uid;
        WITH c AS (SELECT DISTINCT ON (uid) uid, followee_uid FROM following
                    WHERE abs(hashtext(uid)) % 100 = 0 ORDER BY uid, followee_uid),
             gone AS (DELETE FROM following f USING c WHERE f.uid = c.uid AND f.followee_uid = c.followee_uid
                      RETURNING f.uid, f.followee_uid)
        DELETE FROM followers g USING gone WHERE g.uid = gone.followee_uid AND g.follower_uid = gone.uid;
        DELETE FROM messages m
         USING (SELECT DISTINCT ON (sender_uid) chat_key, message_key FROM messages
                 WHERE abs(hashtext(sender_uid)) % 100 = 0 ORDER BY sender_uid, chat_key, message_key) c
         WHERE m.chat_key = c.chat_key AND m.message_key = c.message_key;
        COMMIT;
        """

    func run() throws -> [Result] {
        try files.map(runOne)
    }

    private func runOne(_ file: String) throws -> Result {
        let directory = work + "/\(fileSize(file) / 1_000_000)mb"
        try? FileManager.default.removeItem(atPath: directory)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (cluster, parameters, conninfo) = try openBenchmarkServer(work: directory + "/server")
        defer { cluster.close() }
        let admin = adminBinary()
        let binaries = try cluster.binaries().directory
        let environment = libpqEnvironment(parameters)
        _ = try spawn(admin, ["--db", conninfo, "-q", "migrate"])
        // On the server's maintenance database: the store's is dropped and restored meanwhile.
        let connection = try Connection(
            conninfo: parameters.filter { $0.key != "dbname" }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
                + " dbname=postgres")
        var result = Result(megabytes: Double(fileSize(file)) / 1_000_000)
        func measure(_ name: String, _ program: String, _ arguments: [String], environment: [String] = []) throws {
            let (run, wal) = try spawnMeasuringWAL(
                program, arguments, environment: environment, quiescing: conninfo, on: connection)
            result.rows[name] = (run, Double(wal) / 1_000_000)
            FileHandle.standardError.write(
                Data("\(format(result.megabytes)) MB \(name): \(String(format: "%.2f", run.seconds)) s\n".utf8))
        }
        try writeCopyOutScript(to: directory + "/copy-out.sql")
        try Self.drift.write(toFile: directory + "/drift.sql", atomically: true, encoding: .utf8)
        try measure("import", admin, ["--db", conninfo, "-q", "import", file, "--yes"])
        _ = try spawn(
            binaries + "/pg_dump", ["-Fd", "-j", "2", "-f", directory + "/dump"], environment: environment)
        let store = parameters["dbname"] ?? "admin"
        _ = try spawn(
            binaries + "/psql",
            ["-q", "-d", "postgres", "-c", "DROP DATABASE \"\(store)\"", "-c", "CREATE DATABASE \"\(store)\""],
            environment: environment)
        try measure(
            "pg_restore", binaries + "/pg_restore", ["-j", "2", "-d", store, directory + "/dump"],
            environment: environment)
        try? FileManager.default.removeItem(atPath: directory + "/dump")
        // Not timed: statistics, as an import gathers them, and one read of every row, which sets the hint bits an
        // import's COPY FREEZE spares its store; the first reader of a restored store writes every page for them
        // (a 10 GB export took 117 s so, the same export 91 s once the pages were settled).
        _ = try spawn(binaries + "/psql", ["-q", "-c", "ANALYZE"], environment: environment)
        _ = try spawn(
            binaries + "/psql", ["-q", "-f", directory + "/copy-out.sql"], environment: environment,
            stdout: "/dev/null")
        try measure("export", admin, ["--db", conninfo, "-q", "export", "-"])
        try measure("COPY TO", binaries + "/psql", ["-q", "-f", directory + "/copy-out.sql"], environment: environment)
        try measure("verify", admin, ["--db", conninfo, "-q", "verify", file])
        _ = try spawn(
            binaries + "/psql", ["-q", "-v", "ON_ERROR_STOP=1", "-f", directory + "/drift.sql"],
            environment: environment, stdout: "/dev/null")
        try measure(
            "sync 1 % drifted", admin, ["--db", conninfo, "-q", "sync", file, "--yes", "--temp-dir", directory])
        // Exit 0 only when the store holds the file again: the sync converged.
        try measure("verify after the sync", admin, ["--db", conninfo, "-q", "verify", file])
        print(Self.table([result]))
        return result
    }

    /// Every size side by side: seconds, seconds per GB, the ratio to the yardstick, peak RSS and WAL.
    static func table(_ results: [Result]) -> String {
        let header = results.map { "\(format($0.megabytes)) MB: s · s/GB · ratio · RSS MB · WAL MB" }
        var lines = [
            "| work | yardstick | " + header.joined(separator: " | ") + " |",
            "|---|---|" + results.map { _ in "---|" }.joined(),
        ]
        for (name, yardstick) in operations {
            let cells = results.map { result -> String in
                guard let row = result.rows[name] else { return "" }
                let seconds = row.measurement.seconds
                var cell = String(format: "%.1f · %.1f", seconds, seconds / (result.megabytes / 1000))
                if let yardstick, let base = result.rows[yardstick]?.measurement.seconds, base > 0 {
                    cell += String(format: " · %.2f×", seconds / base)
                }
                return cell + " · " + format(row.measurement.peakMB) + " · " + format(row.walMB)
            }
            lines.append("| \(name) | \(yardstick ?? "") | " + cells.joined(separator: " | ") + " |")
        }
        return lines.joined(separator: "\n")
    }
}
