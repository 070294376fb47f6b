import Foundation
import PostgresClient
import Storage

/// `sync-table`: what reading the store costs against what replacing it costs, on one generated export of `megabytes`
/// MB and later versions of it (`evolve_export.py`): `admin import` beside `pg_restore -j2` of the same store, `admin
/// export` beside `COPY … TO STDOUT` of every table, `admin verify` of the same file, and `admin sync` with nothing
/// changed, 1 % of the users' subtrees changed (the file in RTDB order, and with new keys appended as a script
/// writes them), and 10 %; each sync from the store as the import left it. Each row: wall seconds (median of
/// `runs`), the ratio to its yardstick, the process's peak RSS and the write-ahead log it wrote.
struct SyncBenchmark {
    let file: String
    let runs: Int
    let work: String

    @discardableResult
    func run() throws -> Result {
        try? FileManager.default.removeItem(atPath: work)
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        let (cluster, parameters, conninfo) = try openBenchmarkServer(work: work + "/server")
        defer { cluster.close() }
        let admin = adminBinary()
        let binaries = try cluster.binaries().directory
        let environment = libpqEnvironment(parameters)
        _ = try spawn(admin, ["--db", conninfo, "-q", "migrate"])
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("evolve_export.py").path
        let variants: [(name: String, path: String, arguments: [String])] = [
            ("nothing changed", file, []),
            ("1 % changed, RTDB order", work + "/one.json", ["--percent", "1"]),
            ("1 % changed, new keys appended", work + "/one-appended.json", ["--percent", "1", "--appended"]),
            ("10 % changed", work + "/ten.json", ["--percent", "10"]),
        ]
        for variant in variants where !variant.arguments.isEmpty {
            _ = try spawn("/usr/bin/python3", [script, file, variant.path] + variant.arguments, stdout: "/dev/null")
        }
        let connection = try Connection(conninfo: conninfo)
        /// The run of `arguments`, and the WAL bytes the server wrote meanwhile.
        func measured(_ program: String, _ arguments: [String], environment: [String] = []) throws -> (Measurement, Int)
        {
            try spawnMeasuringWAL(
                program, arguments, environment: environment, quiescing: conninfo, on: connection)
        }
        var rows: [String: [(Measurement, Int)]] = [:]
        try writeCopyOutScript(to: work + "/copy-out.sql")
        for run in 0..<runs {
            rows["import", default: []].append(try measured(admin, ["--db", conninfo, "-q", "import", file, "--yes"]))
            if run == 0 {
                _ = try spawn(binaries + "/pg_dump", ["-Fd", "-f", work + "/dump"], environment: environment)
            }
            _ = try spawn(
                binaries + "/psql", ["-q", "-c", "DROP DATABASE IF EXISTS restored", "-c", "CREATE DATABASE restored"],
                environment: environment)
            rows["pg_restore", default: []].append(
                try measured(
                    binaries + "/pg_restore", ["-j", "2", "-d", "restored", work + "/dump"], environment: environment))
            rows["export", default: []].append(try measured(admin, ["--db", conninfo, "-q", "export", "-"]))
            rows["COPY TO", default: []].append(
                try measured(binaries + "/psql", ["-q", "-f", work + "/copy-out.sql"], environment: environment))
            rows["verify", default: []].append(try measured(admin, ["--db", conninfo, "-q", "verify", file]))
            for variant in variants {
                _ = try spawn(admin, ["--db", conninfo, "-q", "import", file, "--yes"], stdout: "/dev/null")
                rows["sync " + variant.name, default: []].append(
                    try measured(
                        admin, ["--db", conninfo, "-q", "sync", variant.path, "--yes", "--temp-dir", work]))
            }
        }
        let megabytes = Double(fileSize(file)) / 1_000_000
        let result = Result(
            megabytes: megabytes, runs: runs,
            rows: rows.mapValues { values in
                Row(
                    seconds: median(values.map(\.0.seconds)), peakMB: values.map(\.0.peakMB).max() ?? 0,
                    walMB: median(values.map { Double($0.1) }) / 1_000_000)
            })
        print(result.table)
        return result
    }
}

extension SyncBenchmark {
    /// One operation's figures: the median seconds, the largest peak RSS and the median WAL of its runs.
    struct Row {
        var seconds: Double
        var peakMB: Double
        var walMB: Double
    }

    /// The figures of one file, by operation.
    struct Result {
        var megabytes: Double
        var runs: Int
        var rows: [String: Row]

        /// The operations in the order the tables list them, each with its yardstick.
        static let operations: [(name: String, yardstick: String?)] =
            [
                ("import", "pg_restore"), ("pg_restore", nil), ("export", "COPY TO"), ("COPY TO", nil),
                ("verify", "export"),
            ]
            + [
                "nothing changed", "1 % changed, RTDB order", "1 % changed, new keys appended", "10 % changed",
            ].map { ("sync " + $0, "import") }

        /// Seconds of `name` over seconds of its yardstick.
        func ratio(_ name: String, to yardstick: String) -> Double? {
            guard let row = rows[name], let base = rows[yardstick], base.seconds > 0 else { return nil }
            return row.seconds / base.seconds
        }

        /// The WAL a sync of 10 % wrote, as a share of the import's.
        var tenPercentWALShare: Double? {
            guard let ten = rows["sync 10 % changed"], let whole = rows["import"], whole.walMB > 0 else { return nil }
            return ten.walMB / whole.walMB
        }

        /// This file's table, as `sync-table` prints it.
        var table: String {
            var lines = [
                "input: \(format(megabytes)) MB; \(runs) runs each, the median",
                "| work | seconds | ratio | yardstick | peak RSS MB | WAL MB |", "|---|---|---|---|---|---|",
            ]
            for (name, yardstick) in Self.operations {
                guard let row = rows[name] else { continue }
                let shown = yardstick.flatMap { self.ratio(name, to: $0) }.map { String(format: "%.2f×", $0) } ?? ""
                lines.append(
                    "| \(name) | \(String(format: "%.2f", row.seconds)) | \(shown) | \(yardstick ?? "") "
                        + "| \(format(row.peakMB)) | \(format(row.walMB)) |")
            }
            if let share = tenPercentWALShare {
                lines.append("sync 10 % changed wrote \(String(format: "%.1f", 100 * share)) % of the import's WAL")
            }
            return lines.joined(separator: "\n")
        }
    }

    /// The standing table: every operation at each size side by side (seconds, ratio to its yardstick, peak RSS),
    /// with the date, the commit and the command, as BENCHMARKS.md shows it.
    static func standingTable(_ results: [Result], command: String, commit: String) -> String {
        let date = ISO8601DateFormatter.string(from: Date(), timeZone: .gmt, formatOptions: [.withFullDate])
        let runs: String = results.map { "\(sizeName($0.megabytes)): \($0.runs)" }.joined(separator: ", ")
        let header: String = results.map { "\(sizeName($0.megabytes)): s · ratio · RSS MB" }.joined(separator: " | ")
        let rule: String = results.map { _ in "---|" }.joined()
        var lines: [String] = [
            "Measured \(date) at commit \(commit), release build, 2 cores, one server for all; each figure the "
                + "median of its runs (\(runs)), peak RSS the largest:",
            "", "```sh", command, "```", "", "| work | yardstick | \(header) |", "|---|---|\(rule)",
        ]
        for (name, yardstick) in Result.operations {
            let cells = results.map { result -> String in
                guard let row = result.rows[name] else { return "" }
                let ratio = yardstick.flatMap { result.ratio(name, to: $0) }.map { String(format: " · %.2f×", $0) }
                return String(format: "%.2f", row.seconds) + (ratio ?? "") + " · " + format(row.peakMB)
            }
            lines.append("| \(name) | \(yardstick ?? "") | " + cells.joined(separator: " | ") + " |")
        }
        let wal = results.compactMap { result in
            result.tenPercentWALShare.map { "\(sizeName(result.megabytes)) \(String(format: "%.1f", 100 * $0)) %" }
        }
        lines.append("")
        lines.append("WAL of a sync of 10 % against the import's: " + wal.joined(separator: ", ") + ".")
        return lines.joined(separator: "\n")
    }

    /// `232 MB`, `1.1 GB`.
    private static func sizeName(_ megabytes: Double) -> String {
        megabytes >= 1000 ? String(format: "%.1f GB", megabytes / 1000) : String(format: "%.0f MB", megabytes)
    }

    /// Puts `table` in `file` between its standing-table markers, in place of what was there.
    static func writeStanding(_ table: String, into file: String) throws {
        let begin = "<!-- standing table: AdminBenchmarks standing writes what follows -->"
        let end = "<!-- end of the standing table -->"
        let text = try String(contentsOfFile: file, encoding: .utf8)
        guard let start = text.range(of: begin), let stop = text.range(of: end), start.upperBound <= stop.lowerBound
        else {
            throw StorageError(.invalidValue, "\(file) has no standing-table markers")
        }
        let updated = text[..<start.upperBound] + "\n" + table + "\n" + text[stop.lowerBound...]
        try String(updated).write(toFile: file, atomically: true, encoding: .utf8)
    }
}
