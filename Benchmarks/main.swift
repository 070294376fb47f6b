// Benchmarks, run in release mode:
//
//   swift run -c release AdminBenchmarks reader [--size MB] [--runs N] [--file PATH]
//   swift build -c release && .build/release/AdminBenchmarks import-export [--size MB] [--runs N] [--file PATH]
//
//   swift build -c release && .build/release/AdminBenchmarks maintenance [--size MB] [--runs N] [--file PATH]
//
//   swift build -c release && .build/release/AdminBenchmarks operations [--followers N] [--clients N] [--seconds S]
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
// Generates a Makestagram-shaped export of about --size MB (once; reused when the file exists), then measures the
// streaming JSON reader over it --runs times and Foundation's JSONSerialization once, each in its own process so
// that peak RSS is its own. Prints one table row per measurement.
import Foundation
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

/// Runs this benchmark binary with `arguments` and returns its single output line.
func runChild(_ childArguments: [String]) throws -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
    process.arguments = childArguments
    let output = Pipe()
    process.standardOutput = output
    try process.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}

func format(_ value: Double) -> String { String(format: "%.1f", value) }

/// A private embedded server in `work/cluster` (created on first use; `work` open to the server's OS user) and
/// its libpq connection parameters, both as a dictionary and as a conninfo string.
func openBenchmarkServer(work: String) throws -> (cluster: EmbeddedCluster, parameters: [String: String], conninfo: String) {
    try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
    chmod(work, 0o777)
    let cluster = try EmbeddedCluster.open(directory: work + "/cluster")
    let parameters = Dictionary(cluster.connectionParameters, uniquingKeysWith: { $1 })
    return (cluster, parameters, parameters.map { "\($0.key)=\($0.value)" }.joined(separator: " "))
}

switch arguments.first {
case "generate-synthetic":
    let path = arguments[1]
    let megabytes = Int(arguments[2]) ?? 200
    try SyntheticExport(targetBytes: megabytes << 20).write(to: path)

case "reader-once":
    let path = arguments[1]
    var tokens = 0
    let time = try seconds { tokens = try readTokens(path) }
    print("\(time) \(tokens) \(peakRSS())")

case "foundation-once":
    let path = arguments[1]
    let time = try seconds {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        _ = try JSONSerialization.jsonObject(with: data)
    }
    print("\(time) 0 \(peakRSS())")

case "reader":
    let megabytes = Int(option("--size", default: "200")) ?? 200
    let runs = Int(option("--runs", default: "5")) ?? 5
    let path = option("--file", default: "/tmp/admin-bench-synthetic-\(megabytes)mb.json")
    if fileSize(path) == 0 {
        FileHandle.standardError.write(Data("generating \(path) (~\(megabytes) MB)…\n".utf8))
        _ = try runChild(["generate-synthetic", path, String(megabytes)])
    }
    let size = Double(fileSize(path)) / 1_048_576
    print("file: \(path), \(format(size)) MB")
    print("| measurement | runs | median MB/s | min MB/s | max MB/s | tokens/s (median) | peak RSS MB |")
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
        print("| \(name) | \(rates.count) | \(format(median(rates))) | \(format(rates.min()!)) | \(format(rates.max()!)) | \(tokens) | \(format(rss)) |")
    }
    try measure("JSONReader (streaming)", "reader-once", runs: runs)
    try measure("Foundation JSONSerialization", "foundation-once", runs: max(1, runs / 5))

case "import-export":
    let megabytes = Int(option("--size", default: "200")) ?? 200
    let path = option("--file", default: "/tmp/admin-bench-synthetic-\(megabytes)mb.json")
    if fileSize(path) == 0 {
        FileHandle.standardError.write(Data("generating \(path) (~\(megabytes) MB)…\n".utf8))
        _ = try runChild(["generate-synthetic", path, String(megabytes)])
    }
    try ImportExportBenchmark(file: path, runs: Int(option("--runs", default: "3")) ?? 3,
                              work: option("--work", default: "/tmp/admin-bench-work")).run()

case "maintenance":
    let megabytes = Int(option("--size", default: "1000")) ?? 1000
    let path = option("--file", default: "/tmp/admin-bench-synthetic-\(megabytes)mb.json")
    if fileSize(path) == 0 {
        FileHandle.standardError.write(Data("generating \(path) (~\(megabytes) MB)…\n".utf8))
        _ = try runChild(["generate-synthetic", path, String(megabytes)])
    }
    try MaintenanceBenchmark(file: path, runs: Int(option("--runs", default: "3")) ?? 3,
                             work: option("--work", default: "/tmp/admin-bench-maintenance-\(megabytes)mb")).run()

case "operations":
    try OperationsBenchmark(
        followers: max(1000, Int(option("--followers", default: "100000")) ?? 100_000),
        clients: Int(option("--clients", default: "4")) ?? 4, runs: Int(option("--runs", default: "10")) ?? 10,
        duration: Double(option("--seconds", default: "10")) ?? 10,
        work: option("--work", default: "/tmp/admin-bench-operations")).run()

default:
    print("usage: AdminBenchmarks reader|import-export|maintenance|operations [--size MB] [--runs N] [--file PATH]")
    exit(64)
}
