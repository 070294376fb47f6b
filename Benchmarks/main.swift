// Benchmarks, run in release mode. BENCHMARKS.md's standing table, written into it, in one run:
//
//   swift build -c release && .build/release/AdminBenchmarks standing [--sizes 10,200,1100] [--runs 3] \
//       [--large-runs 1] [--write BENCHMARKS.md]
//
// The older whole-suite table (generation, the reader, checks, repairs, the app's operations):
//
//   swift build -c release && .build/release/AdminBenchmarks suite [--sizes 10,200,1000] [--runs 3]
//
// or one part of it:
//
//   swift run -c release AdminBenchmarks reader [--size MB] [--runs N] [--file PATH]
//   swift build -c release && .build/release/AdminBenchmarks import-export [--size MB] [--runs N] [--file PATH]
//
//   swift build -c release && .build/release/AdminBenchmarks maintenance [--size MB] [--runs N] [--file PATH]
//
//   swift build -c release && .build/release/AdminBenchmarks operations [--followers N] [--clients N] [--seconds S]
//
//   swift build -c release && .build/release/AdminBenchmarks export-shapes [--children N] [--large-mb MB] [--runs N]
//
//   swift build -c release && .build/release/AdminBenchmarks hostile-import [--record-mb MB] [--rejects N]
//
//   swift build -c release && .build/release/AdminBenchmarks sync-table [--sizes 200,1100] [--runs 3]
//
//   swift build -c release && .build/release/AdminBenchmarks large [--sizes 1100,10000] [--work DIR]
//
// large runs the table's core once per size up to 10 GB, with a 1 % drift made in the store instead of in the file
// (see LargeBenchmark).
//
// sync-table compares reading the store with replacing it: import beside pg_restore -j2, export beside COPY TO,
// verify, and sync with 0 %, 1 % (ordered and with keys appended) and 10 % changed, with peak RSS and WAL bytes
// (see SyncBenchmark).
//
//   swift build -c release && .build/release/AdminBenchmarks hostile-readers [--mb MB]
//
//   swift build -c release && .build/release/AdminBenchmarks auth [--accounts N] [--runs N]
//
//   swift build -c release && .build/release/AdminBenchmarks mirror [--size MB] [--patches N] [--runs N]
//
// mirror times the first put of a stream (the whole export as one event, on a store holding it) beside sync and
// import of the file, and N one-leaf patches on a plain node and on typed records (see MirrorBenchmark).
//
// auth imports N Firebase Auth accounts beside psql \copy of the same rows, imports them again, merges 1 % changed,
// exports them, and verifies one password (see AuthBenchmark).
//
// hostile-readers runs every command that reads JSON (import on one and two sessions, import from stdin, verify,
// sync, set) on the shapes that crashed or bloated them (deep nesting, a gzip bomb, --mb MB tokens, wide
// objects, a record of --mb / 2 MB), with each run's exit status, seconds, peak RSS and error bytes
// (see HostileReadersBenchmark).
//
// hostile-import imports what one hostile or careless file can hold (one record of --record-mb MB in three
// layouts, --rejects rejected values of 1 MB, a storm of one repeated key) with admin's peak RSS beside Python's
// json.load of the same file, the memory a hand-written migration script needs (see HostileImportBenchmark).
//
// export-shapes times export and get on nodes keyed by integers (epoch timestamps, an array, numeric uids) beside
// the same trees with letter-prefixed keys, and on large values (300 KB leaves, an array of 50 KB strings), with
// peak RSS and the milliseconds of get --order-by-key --limit-to-last 2 (see ExportShapesBenchmark).
//
// operations times post create/delete for a user with --followers followers and the likes, unlikes and chat
// messages --clients connections get through per second (see OperationsBenchmark).
//
// maintenance imports the export once into its own embedded server (kept in --work for later runs), then times
// each check and each repair (dry run) next to a hand-written statement doing the same work.
//
// import-export runs the release `admin` binary beside it against a private embedded server: `admin import` vs
// `psql \copy` of the same rows from pre-made files, `admin export` vs `COPY … TO STDOUT`, with peak RSS.
//
// Each part generates its Makestagram export of about --size MB with the console's generator (`admin generate`,
// seed 1; once, reused when the file exists). reader measures the streaming JSON reader over it --runs times and
// Foundation's JSONSerialization once, each in its own process so that peak RSS is its own. Prints one table row
// per measurement.
import Foundation
import PostgresClient
import Storage

let arguments = Array(CommandLine.arguments.dropFirst())

func option(_ name: String, default value: String) -> String {
    guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count else { return value }
    return arguments[index + 1]
}

/// Peak resident set size of this process, in MB.
func peakRSS() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_maxrss) / 1024
}

func seconds(_ body: () throws -> Void) rethrows -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    try body()
    return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
}

func fileSize(_ path: String) -> Int {
    ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int) ?? 0
}

/// Reads the whole file with the streaming reader; returns the number of tokens.
func readTokens(_ path: String) throws -> Int {
    let descriptor = open(path, O_RDONLY)
    guard descriptor >= 0 else { throw StorageError(.invalidValue, "cannot open \(path)") }
    defer { close(descriptor) }
    var reader = JSONReader(source: FileDescriptorSource(descriptor: descriptor, name: path))
    var tokens = 0
    while try reader.next() != .end { tokens += 1 }
    return tokens
}

/// Reads the file's top-level keys and skips each node's container unread, as a session of a parallel import
/// passes the nodes other sessions load; returns the number of top-level nodes.
func skipNodes(_ path: String) throws -> Int {
    let descriptor = open(path, O_RDONLY)
    guard descriptor >= 0 else { throw StorageError(.invalidValue, "cannot open \(path)") }
    defer { close(descriptor) }
    var reader = JSONReader(source: FileDescriptorSource(descriptor: descriptor, name: path))
    guard try reader.next() == .objectStart else { return 0 }
    var nodes = 0
    while try reader.nextChild() != nil {
        nodes += 1
        if reader.token == .objectStart || reader.token == .arrayStart { try reader.skipContainerUnchecked() }
    }
    return nodes
}

/// Runs this benchmark binary with `arguments` and returns its single output line.
func runChild(_ childArguments: [String], environment: [String: String]? = nil) throws -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
    process.arguments = childArguments
    if let environment { process.environment = environment }
    let output = Pipe()
    process.standardOutput = output
    try process.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
}

/// Writes a file from pieces of text, in 1 MB writes.
func writeFile(_ path: String, _ body: ((String) -> Void) -> Void) {
    _ = FileManager.default.createFile(atPath: path, contents: nil)
    let handle = FileHandle(forWritingAtPath: path)!
    var buffer = ""
    body { piece in
        buffer += piece
        if buffer.utf8.count >= 1 << 20 {
            handle.write(Data(buffer.utf8))
            buffer = ""
        }
    }
    handle.write(Data(buffer.utf8))
    try? handle.close()
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.count % 2 == 1
        ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}

func format(_ value: Double) -> String { String(format: "%.1f", value) }

/// A private embedded server in `work/cluster` (created on first use; `work` open to the server's OS user) and
/// its libpq connection parameters, both as a dictionary and as a conninfo string.
func openBenchmarkServer(work: String) throws -> (
    cluster: EmbeddedCluster, parameters: [String: String], conninfo: String
) {
    try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
    chmod(work, 0o777)
    let cluster = try EmbeddedCluster.open(directory: work + "/cluster")
    let parameters = Dictionary(cluster.connectionParameters, uniquingKeysWith: { $1 })
    return (cluster, parameters, parameters.map { "\($0.key)=\($0.value)" }.joined(separator: " "))
}

/// A fresh private embedded server in `work` (what was there goes), migrated by the release `admin` binary,
/// which is returned too.
func openFreshServer(work: String) throws -> (cluster: EmbeddedCluster, conninfo: String, admin: String) {
    try? FileManager.default.removeItem(atPath: work)
    let (cluster, _, conninfo) = try openBenchmarkServer(work: work)
    let admin = adminBinary()
    _ = try spawn(admin, ["--db", conninfo, "-q", "migrate"])
    return (cluster, conninfo, admin)
}

/// Wall seconds and peak RSS (MB) of one child process, its own CPU seconds (user and system) and the machine's
/// (every process's, from /proc/stat) while it ran.
struct Measurement {
    var seconds: Double
    var peakMB: Double
    var processCPU: Double = 0
    var machineCPU: Double = 0
    /// How it exited (128 + the signal's number when a signal ended it).
    var status: Int32 = 0
}

/// CPU seconds the whole machine has spent busy since boot (user, nice, system, irq, softirq; /proc/stat).
func machineBusySeconds() -> Double {
    guard let stat = try? String(contentsOfFile: "/proc/stat", encoding: .utf8),
        let line = stat.split(separator: "\n").first
    else { return 0 }
    let ticks = line.split(separator: " ").dropFirst().compactMap { Double($0) }
    guard ticks.count >= 7 else { return 0 }
    return (ticks[0] + ticks[1] + ticks[2] + ticks[5] + ticks[6]) / Double(sysconf(Int32(_SC_CLK_TCK)))
}

/// libpq's variables naming the benchmark server's database (for psql, pg_dump, pg_restore).
func libpqEnvironment(_ parameters: [String: String]) -> [String] {
    [
        "PGHOST=\(parameters["host"]!)", "PGUSER=\(parameters["user"]!)", "PGPORT=\(parameters["port"] ?? "5432")",
        "PGDATABASE=\(parameters["dbname"]!)",
    ]
}

/// Runs a program, waits for it and measures its wall time and peak RSS (wait4's rusage).
func spawn(
    _ program: String, _ arguments: [String], environment: [String] = [], stdout: String? = nil, stderr: String? = nil,
    stdin: String? = nil, status expected: Int32? = 0
) throws -> Measurement {
    var actions: posix_spawn_file_actions_t = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    if let stdout { posix_spawn_file_actions_addopen(&actions, 1, stdout, O_WRONLY | O_CREAT | O_TRUNC, 0o644) }
    if let stderr { posix_spawn_file_actions_addopen(&actions, 2, stderr, O_WRONLY | O_CREAT | O_TRUNC, 0o644) }
    if let stdin { posix_spawn_file_actions_addopen(&actions, 0, stdin, O_RDONLY, 0) }
    let argv = ([program] + arguments).map { strdup($0) } + [nil]
    let env =
        (ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("PG") }.map { "\($0.key)=\($0.value)" }
        + environment).map { strdup($0) } + [nil]
    defer { (argv + env).forEach { free($0) } }
    var pid: pid_t = 0
    let busy = machineBusySeconds()
    let start = DispatchTime.now().uptimeNanoseconds
    guard posix_spawn(&pid, program, &actions, nil, argv, env) == 0 else {
        throw StorageError(.invalidValue, "cannot run \(program)")
    }
    let watcher = HighWaterWatcher(pid: pid)
    var status: Int32 = 0
    var usage = rusage()
    wait4(pid, &status, 0, &usage)
    let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    let peakKilobytes = watcher.peakKilobytes(reported: Int(usage.ru_maxrss))
    let machineCPU = machineBusySeconds() - busy
    let exit = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
    if let expected, exit != expected {
        throw StorageError(.invalidValue, "\(program) \(arguments) exited with \(exit)")
    }
    let processCPU =
        Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec)
        / 1e6
    return Measurement(
        seconds: seconds, peakMB: Double(peakKilobytes) / 1024, processCPU: processCPU, machineCPU: machineCPU,
        status: exit)
}

/// A spawned process's own peak resident memory. wait4's `ru_maxrss` alone is not the child's: posix_spawn's child
/// shares this process's memory until it executes, and Linux carries that memory's high-water mark across exec, so
/// every child reports at least this process's peak. The kernel's figure is the child's when it is above this
/// process's peak; otherwise the child's is the high-water mark of its own memory (`VmHWM`, which exec starts
/// afresh), read every 5 ms while it runs.
final class HighWaterWatcher: @unchecked Sendable {
    private let lock = NSLock()
    private var highest = 0
    private var finished = false

    init(pid: pid_t) {
        Thread.detachNewThread { [self] in
            while !lock.withLock({ finished }) {
                if let kilobytes = Self.highWater(of: "/proc/\(pid)/status") {
                    lock.withLock { highest = max(highest, kilobytes) }
                }
                Thread.sleep(forTimeInterval: 0.005)
            }
        }
    }

    /// The child's peak in kilobytes, given what wait4 `reported` once it ended; stops the watching.
    func peakKilobytes(reported: Int) -> Int {
        lock.withLock { finished = true }
        return reported > (Self.highWater(of: "/proc/self/status") ?? 0) ? reported : lock.withLock { highest }
    }

    /// The `VmHWM` line of a `/proc/…/status` file, in kilobytes; nil once the process has gone.
    static func highWater(of statusFile: String) -> Int? {
        guard let text = try? String(contentsOfFile: statusFile, encoding: .utf8),
            let line = text.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") })
        else { return nil }
        return line.split(whereSeparator: { $0 == " " || $0 == "\t" }).dropFirst().first.flatMap { Int($0) }
    }
}

/// The release `admin` binary built beside this one.
func adminBinary() -> String {
    URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        .appendingPathComponent("admin").path
}

/// How many users make a generated export of at least `megabytes` MB (about 3.5 KB of JSON per user).
func users(megabytes: Int) -> Int { max(10, megabytes * 1_000_000 / 3_450) }

/// The generated export of about `megabytes` MB (seed 1), written once and reused.
func generatedExport(megabytes: Int, anomalies: Bool = false) throws -> String {
    let path = "/tmp/admin-bench-gen-\(megabytes)mb\(anomalies ? "-anomalies" : "").json"
    guard fileSize(path) == 0 else { return path }
    FileHandle.standardError.write(Data("generating \(path) (~\(megabytes) MB)…\n".utf8))
    let temporary = path + ".tmp"
    _ = FileManager.default.createFile(atPath: temporary, contents: nil)
    let handle = FileHandle(forWritingAtPath: temporary)!
    let options = GeneratorOptions(users: users(megabytes: megabytes), seed: 1, plantsAnomalies: anomalies)
    let report = try ExportGenerator.write(options) { handle.write(Data($0)) }
    try handle.close()
    try FileManager.default.moveItem(atPath: temporary, toPath: path)
    FileHandle.standardError.write(Data("generated \(report.bytes) bytes in \(format(report.seconds)) s\n".utf8))
    return path
}

/// A Python with psycopg 3 in a private virtualenv (created on first use from PyPI), or nil when it cannot be had.
func pythonWithPsycopg() -> String? {
    let environment = "/tmp/admin-bench-venv"
    let python = environment + "/bin/python"
    if !FileManager.default.fileExists(atPath: python) {
        FileHandle.standardError.write(Data("installing psycopg into \(environment)…\n".utf8))
        let install = Process()
        install.executableURL = URL(fileURLWithPath: "/bin/sh")
        install.arguments = [
            "-c", "python3 -m venv \(environment) && \(environment)/bin/pip install -q 'psycopg[binary]'",
        ]
        guard (try? install.run()) != nil else { return nil }
        install.waitUntilExit()
        guard install.terminationStatus == 0 else {
            try? FileManager.default.removeItem(atPath: environment)
            return nil
        }
    }
    return python
}

/// The streaming reader `runs` times and Foundation's JSONSerialization once (when the file is small enough for
/// its ~40× memory), each in its own process.
func measureReaders(path: String, runs: Int) throws {
    let size = Double(fileSize(path)) / 1_000_000
    print("file: \(path), \(format(size)) MB")
    print("| measurement | runs | median MB/s | min MB/s | max MB/s | tokens or rows /s (median) | peak RSS MB |")
    print("|---|---|---|---|---|---|---|")
    func measure(_ name: String, _ mode: String, runs: Int) throws {
        var rates: [Double] = []
        var tokenRates: [Double] = []
        var rss = 0.0
        for _ in 0..<runs {
            let fields = try runChild([mode, path]).split(separator: " ").compactMap { Double($0) }
            guard fields.count == 3 else { continue }
            rates.append(size / fields[0])
            tokenRates.append(fields[1] / fields[0])
            rss = max(rss, fields[2])
        }
        guard !rates.isEmpty else { return print("| \(name) | failed | | | | | |") }
        let tokens = tokenRates.allSatisfy { $0 == 0 } ? "" : String(format: "%.2fM", median(tokenRates) / 1e6)
        print(
            "| \(name) | \(rates.count) | \(format(median(rates))) | \(format(rates.min()!)) | \(format(rates.max()!)) | \(tokens) | \(format(rss)) |"
        )
    }
    try measure("JSONReader (streaming)", "reader-once", runs: runs)
    try measure("skipping every top-level node unread (a parallel import's other nodes)", "skip-once", runs: runs)
    try measure("import's mapping without a database (read, check, encode COPY rows)", "mapping-once", runs: runs)
    if size <= 320 {
        try measure("Foundation JSONSerialization", "foundation-once", runs: 1)
    } else {
        print(
            "| Foundation JSONSerialization | skipped: needs about 40× the file (\(format(size * 40 / 1000)) GB) | | | | | |"
        )
    }
}

switch arguments.first {
case "reader-once":
    let path = arguments[1]
    var tokens = 0
    let time = try seconds { tokens = try readTokens(path) }
    print("\(time) \(tokens) \(peakRSS())")

case "skip-once":
    let path = arguments[1]
    var nodes = 0
    let time = try seconds { nodes = try skipNodes(path) }
    print("\(time) \(nodes) \(peakRSS())")

case "mapping-once":
    let path = arguments[1]
    let descriptor = open(path, O_RDONLY)
    guard descriptor >= 0 else { throw StorageError(.invalidValue, "cannot open \(path)") }
    var rows = 0
    let time = try seconds {
        rows = try ImportMapping.validate(FileDescriptorSource(descriptor: descriptor, name: path)).rowsImported
    }
    print("\(time) \(rows) \(peakRSS())")

case "foundation-once":
    let path = arguments[1]
    let time = try seconds {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        _ = try JSONSerialization.jsonObject(with: data)
    }
    print("\(time) 0 \(peakRSS())")

case "reader":
    let megabytes = Int(option("--size", default: "200")) ?? 200
    let path = try arguments.contains("--file") ? option("--file", default: "") : generatedExport(megabytes: megabytes)
    try measureReaders(path: path, runs: Int(option("--runs", default: "5")) ?? 5)

case "import-export":
    let megabytes = Int(option("--size", default: "200")) ?? 200
    let path = try arguments.contains("--file") ? option("--file", default: "") : generatedExport(megabytes: megabytes)
    try ImportExportBenchmark(
        file: path, runs: Int(option("--runs", default: "3")) ?? 3,
        work: option("--work", default: "/tmp/admin-bench-work"),
        python: arguments.contains("--no-python") ? nil : pythonWithPsycopg()
    ).run()

case "maintenance":
    let megabytes = Int(option("--size", default: "1000")) ?? 1000
    let path =
        try arguments.contains("--file")
        ? option("--file", default: "") : generatedExport(megabytes: megabytes, anomalies: true)
    try MaintenanceBenchmark(
        file: path, runs: Int(option("--runs", default: "3")) ?? 3,
        work: option("--work", default: "/tmp/admin-bench-maintenance-\(megabytes)mb")
    ).run()

case "operations":
    try OperationsBenchmark(
        followers: max(1000, Int(option("--followers", default: "100000")) ?? 100_000),
        clients: Int(option("--clients", default: "4")) ?? 4, runs: Int(option("--runs", default: "10")) ?? 10,
        duration: Double(option("--seconds", default: "10")) ?? 10,
        work: option("--work", default: "/tmp/admin-bench-operations")
    ).run()

case "export-shapes":
    try ExportShapesBenchmark(
        children: Int(option("--children", default: "1000000")) ?? 1_000_000,
        largeMegabytes: Int(option("--large-mb", default: "1000")) ?? 1000,
        runs: Int(option("--runs", default: "3")) ?? 3,
        work: option("--work", default: "/tmp/admin-bench-shapes")
    ).run()

case "hostile-write":
    HostileImportBenchmark(recordMegabytes: Int(arguments[3])!, rejects: Int(arguments[4])!, work: "")
        .write(case: Int(arguments[1])!, to: arguments[2])

case "hostile-import":
    try HostileImportBenchmark(
        recordMegabytes: Int(option("--record-mb", default: "60")) ?? 60,
        rejects: Int(option("--rejects", default: "1000")) ?? 1000,
        work: option("--work", default: "/tmp/admin-bench-hostile")
    ).run()

case "hostile-readers-write":
    try HostileReadersBenchmark.write(shape: arguments[1], to: arguments[2])

case "hostile-readers":
    try HostileReadersBenchmark(
        megabytes: Int(option("--mb", default: "200")) ?? 200,
        work: option("--work", default: "/tmp/admin-bench-hostile-readers")
    ).run()

case "sync-table":
    for megabytes in option("--sizes", default: "200").split(separator: ",").compactMap({ Int($0) }) {
        try SyncBenchmark(
            file: try generatedExport(megabytes: megabytes), runs: Int(option("--runs", default: "3")) ?? 3,
            work: "/tmp/admin-bench-sync-\(megabytes)mb"
        ).run()
    }

case "large":
    // Once per size, import, export, verify and a 1 % sync beside pg_restore -j2 and COPY TO (see LargeBenchmark).
    let sizes = option("--sizes", default: "1100,10000").split(separator: ",").compactMap { Int($0) }
    let results = try LargeBenchmark(
        files: try sizes.map { try generatedExport(megabytes: $0) },
        work: option("--work", default: "/tmp/admin-bench-large")
    ).run()
    print(LargeBenchmark.table(results))

case "standing":
    // BENCHMARKS.md's standing table: sync-table at each size, side by side, written into the file.
    // Files of a gigabyte or more run `--large-runs` times (a run of the 1.1 GB file takes about 15 minutes).
    let sizes = option("--sizes", default: "10,200,1100")
    let runs = option("--runs", default: "3")
    let largeRuns = option("--large-runs", default: "1")
    var results: [SyncBenchmark.Result] = []
    for megabytes in sizes.split(separator: ",").compactMap({ Int($0) }) {
        results.append(
            try SyncBenchmark(
                file: try generatedExport(megabytes: megabytes),
                runs: Int(megabytes >= 1000 ? largeRuns : runs) ?? 1, work: "/tmp/admin-bench-sync-\(megabytes)mb"
            ).run())
    }
    let commit = try spawnOutput(
        "/usr/bin/git",
        [
            "-C", URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().path,
            "describe", "--always", "--dirty",
        ]
    )
    .trimmingCharacters(in: .whitespacesAndNewlines)
    let table = SyncBenchmark.standingTable(
        results,
        command: "swift build -c release && .build/release/AdminBenchmarks standing --sizes \(sizes) --runs \(runs) "
            + "--large-runs \(largeRuns) --write BENCHMARKS.md",
        commit: commit)
    print(table)
    if let file = arguments.firstIndex(of: "--write").map({ arguments[$0 + 1] }) {
        try SyncBenchmark.writeStanding(table, into: file)
    }

case "auth":
    try AuthBenchmark(
        accounts: Int(option("--accounts", default: "100000")) ?? 100_000,
        runs: Int(option("--runs", default: "3")) ?? 3, work: "/tmp/admin-bench-auth"
    ).run()

case "mirror":
    var benchmark = MirrorBenchmark(
        file: try generatedExport(megabytes: Int(option("--size", default: "10")) ?? 10),
        patches: Int(option("--patches", default: "20000")) ?? 20_000, runs: Int(option("--runs", default: "3")) ?? 3,
        work: "/tmp/admin-bench-mirror")
    try benchmark.run()

case "suite":
    // The older whole table (BENCHMARKS-LOG.md), in one run on one machine: per size, generation, the reader,
    // import and export beside their peers; then checks and repairs, and the app's operations.
    let sizes = option("--sizes", default: "10,200,1000").split(separator: ",").compactMap { Int($0) }
    let runs = Int(option("--runs", default: "3")) ?? 3
    let python = pythonWithPsycopg()
    print("# AdminBenchmarks suite, \(ISO8601DateFormatter().string(from: Date()))")
    print(
        "machine: \(ProcessInfo.processInfo.activeProcessorCount) cores, "
            + "\(ProcessInfo.processInfo.physicalMemory >> 30) GB; Python peer: \(python == nil ? "unavailable" : "psycopg 3")"
    )
    for megabytes in sizes {
        print("\n## About \(megabytes) MB\n")
        let path = try generatedExport(megabytes: megabytes)
        var generated: [Double] = []
        for _ in 0..<runs {
            generated.append(
                try seconds {
                    let options = GeneratorOptions(users: users(megabytes: megabytes), seed: 1)
                    _ = try ExportGenerator.write(options) { _ in }
                })
        }
        let generatedMB = Double(fileSize(path)) / 1_000_000
        print(
            "generator: \(format(generatedMB / median(generated))) MB/s median of \(runs) "
                + "(\(format(generatedMB / generated.max()!))–\(format(generatedMB / generated.min()!)))\n")
        try measureReaders(path: path, runs: max(runs, 5))
        print("")
        try ImportExportBenchmark(
            file: path, runs: megabytes >= 1000 ? 1 : runs,
            work: "/tmp/admin-bench-work-\(megabytes)mb", python: python
        ).run()
    }
    let maintenanceSize = Int(option("--maintenance-size", default: "200")) ?? 200
    print("\n## Checks and repairs (about \(maintenanceSize) MB, with anomalies)\n")
    try MaintenanceBenchmark(
        file: try generatedExport(megabytes: maintenanceSize, anomalies: true), runs: runs,
        work: "/tmp/admin-bench-maintenance-\(maintenanceSize)mb-anomalies"
    ).run()
    print("\n## The app's operations\n")
    try OperationsBenchmark(
        followers: 100_000, clients: 4, runs: 10, duration: 10,
        work: "/tmp/admin-bench-operations"
    ).run()

default:
    print(
        "usage: AdminBenchmarks suite|reader|import-export|maintenance|operations|export-shapes|hostile-import|"
            + "hostile-readers|sync-table|standing|large|auth|mirror [--size MB] [--runs N] [--file PATH]"
    )
    exit(64)
}
