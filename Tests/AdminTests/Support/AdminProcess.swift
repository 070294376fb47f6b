import Foundation
import PostgresTestSupport
import Testing

extension FileHandle {
    /// Reads until what was read into `buffer` contains `text` (or the stream ends), and returns it all.
    func read(until text: String, into buffer: inout Data) -> String {
        while !String(decoding: buffer, as: UTF8.self).contains(text) {
            let chunk = availableData
            if chunk.isEmpty { break }
            buffer.append(chunk)
        }
        return String(decoding: buffer, as: UTF8.self)
    }
}

/// What one run of the `admin` binary printed and how it ended.
struct AdminRun {
    var status: Int32
    var stdout: String
    var stderr: String
}

/// Runs the built `admin` binary the way a user or cron would, with a clean environment (no DATABASE_URL or PG*
/// variables leaking in from the machine).
enum AdminProcess {
    /// The `admin` executable built beside this test bundle.
    static var executable: URL {
        let testBinary = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        return testBinary.deletingLastPathComponent().appendingPathComponent("admin")
    }

    static func environment(_ extra: [String: String]) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment.filter {
            !$0.key.hasPrefix("PG") && $0.key != "DATABASE_URL" && $0.key != "ADMIN_DATA_DIR"
        }
        environment.merge(extra) { $1 }
        return environment
    }

    /// Starts admin with piped standard streams; the caller writes, reads and waits.
    static func start(_ arguments: [String], environment extra: [String: String] = [:], directory: String? = nil)
        throws -> (Process, Pipe, Pipe, Pipe)
    {
        try start(executable, arguments, environment: environment(extra), directory: directory)
    }

    private static func start(
        _ program: URL, _ arguments: [String], environment: [String: String], directory: String?
    ) throws -> (Process, Pipe, Pipe, Pipe) {
        let process = Process()
        process.executableURL = program
        if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
        process.arguments = arguments
        process.environment = environment
        let input = Pipe(), output = Pipe(), errors = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        return (process, input, output, errors)
    }

    /// Runs admin to completion with `input` on stdin (closed right after), and a time limit.
    static func run(
        _ arguments: [String], input: String = "", environment extra: [String: String] = [:],
        directory: String? = nil, timeout: TimeInterval = 120
    ) throws -> AdminRun {
        try finish(try start(arguments, environment: extra, directory: directory), input: input, timeout: timeout)
    }

    /// Runs a bash command line to completion as `run` runs admin, in `environment` as given; Ctrl-C (SIGINT)
    /// after `interruptAfter` seconds when given.
    static func runShell(
        _ command: String, input: String, environment: [String: String], directory: String,
        interruptAfter: TimeInterval? = nil, timeout: TimeInterval = 120
    ) throws -> AdminRun {
        let started = try start(
            URL(fileURLWithPath: "/bin/bash"), ["-c", command], environment: environment, directory: directory)
        return try finish(started, input: input, timeout: timeout, interruptAfter: interruptAfter)
    }

    private static func finish(
        _ started: (Process, Pipe, Pipe, Pipe), input: String, timeout: TimeInterval,
        interruptAfter: TimeInterval? = nil
    ) throws -> AdminRun {
        let (process, stdin, stdout, stderr) = started
        stdin.fileHandleForWriting.write(Data(input.utf8))
        try stdin.fileHandleForWriting.close()
        let errors = Mutex(Data())
        let reader = Thread { errors.withLock { $0 = stderr.fileHandleForReading.readDataToEndOfFile() } }
        reader.start()
        let deadline = Date().addingTimeInterval(timeout)
        let interruption = interruptAfter.map { Date().addingTimeInterval($0) }
        let timer = Thread {
            while process.isRunning && Date() < deadline {
                if let interruption, Date() >= interruption, process.isRunning {
                    // Ctrl-C reaches the terminal's whole process group: a shell and the admin it runs.
                    let group = getpgid(process.processIdentifier)
                    if group > 0, group != getpgrp() { kill(-group, SIGINT) } else { process.interrupt() }
                    break
                }
                Thread.sleep(forTimeInterval: 0.05)
            }
            while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
            if process.isRunning { process.interrupt(); kill(process.processIdentifier, SIGKILL) }
        }
        timer.start()
        let output = stdout.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        while reader.isExecuting || !reader.isFinished { Thread.sleep(forTimeInterval: 0.01) }
        return AdminRun(
            status: process.terminationStatus, stdout: String(decoding: output, as: UTF8.self),
            stderr: String(decoding: errors.withLock { $0 }, as: UTF8.self))
    }
}

/// A run of admin measured by `AdminProcess.runMeasured`: what it printed, and its peak resident memory.
struct MeasuredRun {
    var run: AdminRun
    /// The process's peak resident set size, in megabytes.
    var peakMegabytes: Double
}

extension AdminProcess {
    /// Runs admin as `run` does, in `directory`, with stdin from `inputFile` (else nothing) and the environment
    /// `run` gives it, and measures its peak resident memory.
    ///
    /// wait4's `ru_maxrss` alone is not admin's: posix_spawn's child shares this process's memory until it
    /// executes, and Linux carries that memory's high-water mark across exec, so a child of a test process
    /// that has grown past 128 MB reports at least that much. The kernel's figure is admin's own when it is
    /// above this process's peak; otherwise admin's is the high-water mark of its own memory (`VmHWM`, which
    /// exec starts afresh), read every 5 ms until it exits.
    static func runMeasured(
        _ arguments: [String], inputFile: String? = nil, environment extra: [String: String] = [:],
        directory: String, timeout: TimeInterval = 120
    ) throws -> MeasuredRun {
        let out = directory + "/measured.out", err = directory + "/measured.err"
        let quoted = ([executable.path] + arguments).map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }
        let command = "cd '\(directory)' && exec " + quoted.joined(separator: " ") + " < '\(inputFile ?? "/dev/null")'"
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, out, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, err, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        let words: [String] = ["/bin/sh", "-c", command]
        let settings: [String] = environment(extra).map { "\($0.key)=\($0.value)" }
        let argv = words.map { strdup($0) } + [nil]
        let env = settings.map { strdup($0) } + [nil]
        defer { (argv + env).forEach { free($0) } }
        var pid: pid_t = 0
        guard posix_spawn(&pid, "/bin/sh", &actions, nil, argv, env) == 0 else {
            throw CocoaError(.executableLoad)
        }
        let finished = Mutex(false)
        let highWater = Mutex(0)
        let child = pid
        let watchdog = Thread {
            let deadline = Date().addingTimeInterval(timeout)
            while Date() < deadline, !finished.withLock({ $0 }) {
                if let kilobytes = highWaterKilobytes(of: "/proc/\(child)/status") {
                    highWater.withLock { $0 = max($0, kilobytes) }
                }
                Thread.sleep(forTimeInterval: 0.005)
            }
            if !finished.withLock({ $0 }) { kill(child, SIGKILL) }
        }
        watchdog.start()
        var status: Int32 = 0
        var usage = rusage()
        while wait4(pid, &status, 0, &usage) < 0, errno == EINTR {}
        finished.withLock { $0 = true }
        // A signal's death reads as 128 + its number, as a shell reports it.
        let exit = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        let run = AdminRun(
            status: exit, stdout: (try? String(contentsOfFile: out, encoding: .utf8)) ?? "",
            stderr: (try? String(contentsOfFile: err, encoding: .utf8)) ?? "")
        let own = Int(usage.ru_maxrss) > (highWaterKilobytes(of: "/proc/self/status") ?? 0)
        let kilobytes = own ? Int(usage.ru_maxrss) : highWater.withLock { $0 }
        return MeasuredRun(run: run, peakMegabytes: Double(kilobytes) / 1024)
    }

    /// The `VmHWM` line of a `/proc/…/status` file, in kilobytes; nil once the process has gone.
    private static func highWaterKilobytes(of statusFile: String) -> Int? {
        guard let text = try? String(contentsOfFile: statusFile, encoding: .utf8),
            let line = text.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") })
        else { return nil }
        return line.split(whereSeparator: { $0 == " " || $0 == "\t" }).dropFirst().first.flatMap { Int($0) }
    }
}

/// A fresh directory under /tmp (short, so a Unix socket path inside it fits), removed by the caller.
/// A new migrated database holding `tree`, imported as a user would (`admin import -`).
func databaseHolding(_ tree: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> TestDatabase {
    let database = try TestPostgres.makeDatabase()
    let run = try AdminProcess.run(["--db", database.conninfo, "-q", "import", "-"], input: tree)
    #expect(run.status == 0, "\(run.stderr)", sourceLocation: sourceLocation)
    return database
}

func makeTemporaryDirectory(_ prefix: String) throws -> String {
    let path = "/tmp/\(prefix)-\(UUID().uuidString.prefix(8))"
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}
