import Foundation
import PostgresClient
import Storage

/// `import-export`: loads one export with `admin import`, the same rows with `psql \copy` from pre-made files (into
/// the same tables and indexes, and into tables with primary keys only), the same store with `pg_restore -j2` of
/// a `pg_dump -Fd` of it into a fresh database, and with a Python peer (`json.load` + psycopg COPY), then writes it
/// back with `admin export` and with `COPY … TO STDOUT`, and verifies the store against the file with `admin verify`
/// (one pass, and sorting the file first as for an export a script wrote), all against one embedded server, and
/// prints wall times, ratios and each process's peak RSS.
struct ImportExportBenchmark {
    let file: String
    let runs: Int
    let work: String
    /// A Python with psycopg, for the peer; nil leaves it out.
    let python: String?

    func run() throws {
        try? FileManager.default.removeItem(atPath: work)
        let (cluster, parameters, conninfo) = try openBenchmarkServer(work: work)
        defer { cluster.close() }
        let admin = adminBinary()
        let psql = (try cluster.binaries()).directory + "/psql"
        let server = [
            "PGHOST=\(parameters["host"]!)", "PGUSER=\(parameters["user"]!)", "PGPORT=\(parameters["port"] ?? "5432")",
        ]
        let psqlEnvironment = server + ["PGDATABASE=\(parameters["dbname"]!)"]
        _ = try spawn(admin, ["--db", conninfo, "-q", "migrate"])
        // The primary-keys-only yardstick: the same schema without its other indexes.
        _ = try spawn(psql, ["-q", "-c", "CREATE DATABASE pk_only"], environment: psqlEnvironment)
        let pkOnly = server + ["PGDATABASE=pk_only"]
        _ = try spawn(
            admin,
            [
                "--db", conninfo.replacingOccurrences(of: "dbname=\(parameters["dbname"]!)", with: "dbname=pk_only"),
                "-q", "migrate",
            ])
        _ = try spawn(
            psql,
            [
                "-q", "-v", "ON_ERROR_STOP=1", "-c",
                """
                DO $$ DECLARE index regclass; BEGIN
                  FOR index IN SELECT indexrelid::regclass FROM pg_index JOIN pg_class ON pg_class.oid = indrelid
                      WHERE relnamespace = 'public'::regnamespace AND NOT indisprimary LOOP
                    EXECUTE format('DROP INDEX %s', index);
                  END LOOP;
                END $$
                """,
            ], environment: pkOnly)

        var imports: [Measurement] = [], singleSessionImports: [Measurement] = [], copies: [Measurement] = [],
            exports: [Measurement] = [],
            copyOuts: [Measurement] = [], peers: [Measurement] = [], restores: [Measurement] = [],
            pkOnlyCopies: [Measurement] = [], verifies: [Measurement] = [], sortedVerifies: [Measurement] = []
        let peerScript = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("python_peer_import.py").path
        let tables = Store.treeTables
        for run in 0..<runs {
            singleSessionImports.append(
                try spawn(admin, ["--db", conninfo, "-q", "import", file, "--jobs", "1"], stdout: "/dev/null"))
            imports.append(try spawn(admin, ["--db", conninfo, "-q", "import", file], stdout: "/dev/null"))
            if run == 0 {
                // The pre-made files: each table's rows in the order the import stored them (heap order), so
                // both loads insert the same rows in the same order.
                let connection = try Connection(conninfo: conninfo)
                for table in tables {
                    let handle = FileHandle(forWritingAtPath: createFile("\(work)/\(table).tsv"))!
                    try connection.copyOut("COPY \(identifier: table) TO STDOUT") { handle.write(Data($0)) }
                    try handle.close()
                }
                let script =
                    ["BEGIN;", "TRUNCATE \(tables.joined(separator: ", "));"]
                    + tables.map { "\\copy \($0) FROM '\(work)/\($0).tsv'" } + ["COMMIT;"]
                try script.joined(separator: "\n").write(toFile: "\(work)/load.sql", atomically: true, encoding: .utf8)
                _ = try spawn(
                    (try cluster.binaries()).directory + "/pg_dump", ["-Fd", "-f", "\(work)/dump"],
                    environment: psqlEnvironment)
            }
            _ = try spawn(
                psql, ["-q", "-c", "DROP DATABASE IF EXISTS restored", "-c", "CREATE DATABASE restored"],
                environment: psqlEnvironment)
            restores.append(
                try spawn(
                    (try cluster.binaries()).directory + "/pg_restore", ["-j", "2", "-d", "restored", "\(work)/dump"],
                    environment: psqlEnvironment))
            pkOnlyCopies.append(
                try spawn(
                    psql, ["-q", "-v", "ON_ERROR_STOP=1", "-f", "\(work)/load.sql"],
                    environment: pkOnly))
            // The loads just made leave autovacuum and a checkpoint behind them, which would land on whichever
            // read came next: both reads start on a quiet server.
            try quiesce(conninfo)
            exports.append(try spawn(admin, ["--db", conninfo, "-q", "export", "\(work)/export.json", "--force"]))
            verifies.append(try spawn(admin, ["--db", conninfo, "-q", "verify", file], stdout: "/dev/null"))
            sortedVerifies.append(
                try spawn(
                    admin, ["--db", conninfo, "-q", "verify", "--sort", "--temp-dir", work, file],
                    stdout: "/dev/null"))
            copies.append(
                try spawn(
                    psql, ["-q", "-v", "ON_ERROR_STOP=1", "-f", "\(work)/load.sql"],
                    environment: psqlEnvironment))
            if let python { peers.append(try spawn(python, [peerScript, file, conninfo])) }
            try writeCopyOutScript(tables, to: "\(work)/copy-out.sql")
            try quiesce(conninfo)
            copyOuts.append(
                try spawn(
                    psql, ["-q", "-f", "\(work)/copy-out.sql"], environment: psqlEnvironment,
                    stdout: "/dev/null"))
        }
        let inputMB = Double(fileSize(file)) / 1_000_000
        let outputMB = Double(fileSize("\(work)/export.json")) / 1_000_000
        func row(_ name: String, _ values: [Measurement], megabytes: Double, baseline: [Measurement]?) {
            let seconds = median(values.map(\.seconds))
            let ratio = baseline.map { String(format: "%.2f×", seconds / median($0.map(\.seconds))) } ?? ""
            print(
                "| \(name) | \(values.count) | \(String(format: "%.2f", seconds)) | "
                    + "\(String(format: "%.2f", values.map(\.seconds).min()!))–\(String(format: "%.2f", values.map(\.seconds).max()!)) | "
                    + "\(format(megabytes / seconds)) | \(ratio) | "
                    + "\(String(format: "%.1f", median(values.map(\.machineCPU)))) | "
                    + "\(String(format: "%.1f", median(values.map(\.processCPU)))) | "
                    + "\(format(values.map(\.peakMB).max()!)) |")
        }
        print("input: \(file), \(format(inputMB)) MB; export: \(format(outputMB)) MB")
        print(
            "| measurement | runs | median s | min–max s | MB/s (JSON) | vs baseline | machine CPU s | process CPU s "
                + "| peak RSS MB |")
        print("|---|---|---|---|---|---|---|---|---|")
        row("admin import (default --jobs, one per core)", imports, megabytes: inputMB, baseline: copies)
        row("admin import --jobs 1", singleSessionImports, megabytes: inputMB, baseline: copies)
        row("psql \\copy of the same rows (one transaction)", copies, megabytes: inputMB, baseline: nil)
        row(
            "pg_restore -j2 of a pg_dump -Fd of the store, into a new database", restores, megabytes: inputMB,
            baseline: nil)
        row("admin import / pg_restore -j2", imports, megabytes: inputMB, baseline: restores)
        row("admin import --jobs 1 / pg_restore -j2", singleSessionImports, megabytes: inputMB, baseline: restores)
        row("psql \\copy into tables with primary keys only", pkOnlyCopies, megabytes: inputMB, baseline: nil)
        row("admin import / \\copy, primary keys only", imports, megabytes: inputMB, baseline: pkOnlyCopies)
        if !peers.isEmpty {
            row("Python json.load + psycopg COPY (one transaction)", peers, megabytes: inputMB, baseline: copies)
        }
        row("admin export", exports, megabytes: outputMB, baseline: copyOuts)
        row("psql COPY … TO STDOUT of the same tables", copyOuts, megabytes: outputMB, baseline: nil)
        row("admin verify of the imported file / admin export", verifies, megabytes: inputMB, baseline: exports)
        row(
            "admin verify --sort (keys sorted on disk first) / admin export", sortedVerifies, megabytes: inputMB,
            baseline: exports)
    }

    private func createFile(_ path: String) -> String {
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        return path
    }
}

/// Waits (up to two minutes) until no autovacuum worker runs on the server, then checkpoints, so that the next
/// measurement shares the machine with nothing the previous ones left.
func quiesce(_ conninfo: String) throws {
    let connection = try Connection(conninfo: conninfo)
    for _ in 0..<120 {
        let workers = try connection.query(
            "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'autovacuum worker'")[0]
            .decode(Int.self, at: 0)
        if workers == 0 { break }
        sleep(1)
    }
    try connection.execute("CHECKPOINT")
}

/// The run of a program (its output to /dev/null) once the server of `conninfo` is quiet (`quiesce`), and the WAL
/// bytes the server wrote meanwhile, read on `connection` (any database of that server).
func spawnMeasuringWAL(
    _ program: String, _ arguments: [String], environment: [String] = [], quiescing conninfo: String,
    on connection: Connection
) throws -> (Measurement, Int) {
    try quiesce(conninfo)
    let before = try connection.query("SELECT pg_current_wal_lsn()::text")[0].decode(String.self, at: 0)
    let run = try spawn(program, arguments, environment: environment, stdout: "/dev/null")
    let wal = try connection.query("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), \(before)::pg_lsn)::bigint")[0]
        .decode(Int.self, at: 0)
    return (run, wal)
}

/// Writes a psql script that copies each of `tables` to standard output: the yardstick of an export.
func writeCopyOutScript(_ tables: [String] = Store.treeTables + Store.lookupTables, to path: String) throws {
    try tables.map { "COPY \($0) TO STDOUT;" }.joined(separator: "\n")
        .write(toFile: path, atomically: true, encoding: .utf8)
}
