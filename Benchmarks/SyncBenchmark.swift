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

    func run() throws {
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
            try quiesce(conninfo)
            let before = try connection.query("SELECT pg_current_wal_lsn()::text")[0].decode(String.self, at: 0)
            let run = try spawn(program, arguments, environment: environment, stdout: "/dev/null")
            let wal = try connection.query("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), \(before)::pg_lsn)::bigint")[0]
                .decode(Int.self, at: 0)
            return (run, wal)
        }
        var rows: [String: [(Measurement, Int)]] = [:]
        let tables = Store.treeTables + Store.lookupTables
        try tables.map { "COPY \($0) TO STDOUT;" }.joined(separator: "\n")
            .write(toFile: work + "/copy-out.sql", atomically: true, encoding: .utf8)
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
        func seconds(_ name: String) -> Double { median(rows[name]!.map(\.0.seconds)) }
        print("input: \(file), \(format(megabytes)) MB; \(runs) runs each, the median")
        print("| work | seconds | ratio | yardstick | peak RSS MB | WAL MB |")
        print("|---|---|---|---|---|---|")
        func row(_ name: String, yardstick: String?) {
            let values = rows[name]!
            let ratio = yardstick.map { String(format: "%.2f×", seconds(name) / seconds($0)) } ?? ""
            print(
                "| \(name) | \(String(format: "%.2f", seconds(name))) | \(ratio) | \(yardstick ?? "") "
                    + "| \(format(values.map(\.0.peakMB).max()!)) "
                    + "| \(format(Double(median(values.map { Double($0.1) })) / 1_000_000)) |")
        }
        row("import", yardstick: "pg_restore")
        row("pg_restore", yardstick: nil)
        row("export", yardstick: "COPY TO")
        row("COPY TO", yardstick: nil)
        row("verify", yardstick: "export")
        for variant in variants { row("sync " + variant.name, yardstick: "import") }
        let importWAL = median(rows["import"]!.map { Double($0.1) })
        let tenWAL = median(rows["sync 10 % changed"]!.map { Double($0.1) })
        print("sync 10 % changed wrote \(String(format: "%.1f", 100 * tenWAL / importWAL)) % of the import's WAL")
    }
}
