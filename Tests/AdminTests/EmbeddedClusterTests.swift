import Foundation
import PostgresClient
import PostgresTestSupport
import Testing

@testable import Storage

/// The embedded default: a private cluster created on first use, shared by concurrent consoles, stopped by
/// the last one, and recovering from crashes.
@Suite("Embedded PostgreSQL")
struct EmbeddedClusterTests {
    func serverIsRunning(in directory: String) -> Bool {
        FileManager.default.fileExists(atPath: directory + "/pgdata/postmaster.pid")
    }

    /// Starts an interactive console on the cluster in `directory` and waits until it has answered a command, so
    /// that its server is up.
    func startConsoleWithItsServer(in directory: String) throws -> (Process, Pipe) {
        let (console, input, output, _) = try AdminProcess.start(["--data-dir", directory])
        input.fileHandleForWriting.write(Data("status --format csv\n".utf8))
        var answer = Data()
        #expect(output.fileHandleForReading.read(until: "unmapped_values", into: &answer).contains("unmapped_values"))
        return (console, input)
    }

    /// A helper's output (initdb's, pg_ctl's) is captured through a file unlinked before the helper starts: a
    /// console killed while one runs leaves nothing in the temporary directory.
    @Test func aHelpersOutputGoesThroughAnUnlinkedFile() throws {
        let outcome = try ProcessRunner().run(
            "/bin/sh",
            ["-c", "readlink /proc/$$/fd/1; head -c 40000 /dev/zero | tr '\\0' x; echo; echo err >&2; exit 3"])
        #expect(outcome.status == 3)
        let lines = outcome.output.split(separator: "\n")
        #expect(lines.first?.hasSuffix(" (deleted)") == true, "\(lines.first ?? "")")
        #expect(lines.dropFirst().first == Substring(String(repeating: "x", count: 40000)))
        #expect(lines.last == "err" && lines.count == 3)
    }

    @Test func firstUseCreatesAMigratedPrivateClusterAndTheLastConsoleStopsIt() throws {
        let directory = try makeTemporaryDirectory("admin-e1")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let run = try AdminProcess.run(["--data-dir", directory, "status"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains("embedded cluster in \(directory)"))
        #expect(run.stdout.contains("version \(latest.version) (\(latest.fileName)), up to date"))
        #expect(!serverIsRunning(in: directory))

        var info = stat()
        #expect(stat(directory + "/pgdata", &info) == 0)
        #expect(info.st_mode & 0o777 == 0o700)
        let settings = try String(contentsOfFile: directory + "/pgdata/postgresql.conf", encoding: .utf8)
        #expect(settings.contains("listen_addresses = ''"))

        // ADMIN_DATA_DIR selects the same cluster.
        let again = try AdminProcess.run(["status", "--format", "json"], environment: ["ADMIN_DATA_DIR": directory])
        #expect(again.status == 0)
        #expect(again.stdout.contains("\"embedded\": true"))

        // psql opens on the same cluster, through its socket; the server stops after it as after any command.
        let psql = try AdminProcess.run(
            ["--data-dir", directory, "psql", "-X", "-tA", "-c", "SELECT current_database(), count(*) FROM users"])
        #expect(psql.status == 0 && psql.stdout == "admin|0\n", "\(psql.stdout)\(psql.stderr)")
        #expect(!serverIsRunning(in: directory))
    }

    /// `timeout`, `systemctl stop` and a closed terminal end a console with SIGTERM or SIGHUP: it closes its
    /// session, stops the server it started, and exits with the shell's status for the signal.
    @Test(arguments: [SIGTERM, SIGHUP])
    func aSignalledConsoleStopsItsServer(signal: Int32) throws {
        let directory = try makeTemporaryDirectory("admin-e7")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (console, _) = try startConsoleWithItsServer(in: directory)
        #expect(serverIsRunning(in: directory))
        kill(console.processIdentifier, signal)
        console.waitUntilExit()
        #expect(console.terminationStatus == 128 + signal)
        #expect(!serverIsRunning(in: directory))
    }

    /// A console stopped while its server is still starting (`pg_ctl start` running, the session not yet open)
    /// leaves no one to stop the server but the watchdog, which starts before the server for that reason.
    @Test(arguments: [SIGTERM, SIGKILL])
    func aConsoleStoppedWhileItsServerStartsLeavesNoServer(signal: Int32) throws {
        let directory = try makeTemporaryDirectory("admin-e9")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // The cluster exists (initdb done) and is stopped, so the next console's first step is pg_ctl start.
        #expect(try AdminProcess.run(["--data-dir", directory, "status"]).status == 0)
        #expect(!serverIsRunning(in: directory))
        // Its watchdog notices within a second that the server is gone; the next one must do the work alone.
        let watchdogGone = Date().addingTimeInterval(10)
        while Self.isRunning(commandContaining: ["admin-watchdog", directory]), Date() < watchdogGone {
            Thread.sleep(forTimeInterval: 0.1)
        }
        let (console, _, _, _) = try AdminProcess.start(["--data-dir", directory, "status"])
        let starting = Date().addingTimeInterval(20)
        var caught = false
        while !caught, Date() < starting {
            caught = Self.isRunning(commandContaining: ["pg_ctl", directory + "/pgdata", "start"])
            if !caught { Thread.sleep(forTimeInterval: 0.002) }
        }
        #expect(caught, "the console was stopped while pg_ctl start ran")
        kill(console.processIdentifier, signal)
        console.waitUntilExit()
        Thread.sleep(forTimeInterval: 1)  // pg_ctl, not signalled, finishes starting the server
        let deadline = Date().addingTimeInterval(15)
        while serverIsRunning(in: directory) && Date() < deadline { Thread.sleep(forTimeInterval: 0.1) }
        #expect(!serverIsRunning(in: directory), "the server outlived its console stopped during start-up by 15 s")
    }

    /// Whether a process runs whose command line holds each of `parts`.
    static func isRunning(commandContaining parts: [String]) -> Bool {
        let processes = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return processes.contains { pid in
            guard pid.allSatisfy(\.isNumber),
                let line = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline")
            else { return false }
            let text = String(decoding: line.map { $0 == 0 ? 32 : $0 }, as: UTF8.self)
            return parts.allSatisfy { text.contains($0) }
        }
    }

    /// A console killed outright (SIGKILL, the OOM killer) cannot stop anything; its server's watchdog notices
    /// that no console is left and stops it within a couple of seconds.
    @Test func aServerLeftByKillNineIsStoppedByItsWatchdog() throws {
        let directory = try makeTemporaryDirectory("admin-e8")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (console, _) = try startConsoleWithItsServer(in: directory)
        kill(console.processIdentifier, SIGKILL)
        console.waitUntilExit()
        let deadline = Date().addingTimeInterval(10)
        while serverIsRunning(in: directory) && Date() < deadline { Thread.sleep(forTimeInterval: 0.1) }
        #expect(!serverIsRunning(in: directory), "the server outlived its killed console by 10 s")
    }

    @Test func killingAConsoleLosesNothingCommitted() throws {
        let directory = try makeTemporaryDirectory("admin-e2")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (console, _) = try startConsoleWithItsServer(in: directory)
        // Another client commits a row while the console session is open.
        let user = String(cString: getpwuid(geteuid())!.pointee.pw_name)
        let connection = try Connection(
            conninfo: "",
            parameters: [
                ("host", directory + "/pgdata"), ("user", user), ("dbname", "admin"),
            ])
        try connection.execute("INSERT INTO users (uid, username) VALUES ('survivor', 'still here')")

        kill(console.processIdentifier, SIGKILL)
        console.waitUntilExit()
        #expect(console.terminationReason == .uncaughtSignal)

        let next = try AdminProcess.run(["--data-dir", directory, "status", "--format", "json"])
        #expect(next.status == 0, "\(next.stderr)")
        #expect(next.stdout.contains("\"users\": 1"))
    }

    /// Only the OS user who owns the cluster gets in: peer authentication on the Unix socket, nothing over TCP.
    @Test func theEmbeddedClusterAcceptsOnlyItsOwner() throws {
        let directory = try makeTemporaryDirectory("admin-e5")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (console, input) = try startConsoleWithItsServer(in: directory)
        defer {
            try? input.fileHandleForWriting.close()
            console.waitUntilExit()
        }
        let rules = try String(contentsOfFile: directory + "/pgdata/pg_hba.conf", encoding: .utf8)
            .split(separator: "\n").map { $0.split(whereSeparator: \.isWhitespace) }
            .filter { !$0.isEmpty && !$0[0].hasPrefix("#") }
        #expect(!rules.isEmpty)
        for rule in rules {
            #expect((rule[0] == "local" && rule.last == "peer") || rule.last == "reject", "\(rule)")
        }
        // Another role, even over the owner's own socket, is refused by peer authentication.
        let refusal = #expect(throws: StorageError.self) {
            try Store(
                conninfo: "",
                parameters: [
                    ("host", directory + "/pgdata"), ("user", "someone_else"), ("dbname", "admin"),
                ])
        }
        #expect(refusal?.description.contains("Peer authentication failed") == true, "\(String(describing: refusal))")
    }

    @Test func aStalePidFileFromACrashIsRecoveredFrom() throws {
        let directory = try makeTemporaryDirectory("admin-e3")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        #expect(try AdminProcess.run(["--data-dir", directory, "migrate"]).status == 0)
        #expect(!serverIsRunning(in: directory))
        // What a crashed server leaves behind: a postmaster.pid naming a process that is gone.
        let stale =
            "999999\n\(directory)/pgdata\n1700000000\n5432\n\(directory)/pgdata\n\n  5432001         0\nready   \n"
        try stale.write(toFile: directory + "/pgdata/postmaster.pid", atomically: true, encoding: .utf8)
        let run = try AdminProcess.run(["--data-dir", directory, "status"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains("up to date"))
    }

    @Test func aClusterOfAnotherMajorVersionIsExplained() throws {
        let directory = try makeTemporaryDirectory("admin-e4")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: directory + "/pgdata", withIntermediateDirectories: true)
        try "9\n".write(toFile: directory + "/pgdata/PG_VERSION", atomically: true, encoding: .utf8)
        let run = try AdminProcess.run(["--data-dir", directory, "status"])
        #expect(run.status == 2)
        #expect(run.stderr.contains("created by PostgreSQL 9"))
        #expect(run.stderr.contains("HINT:"))
    }

    @Test func aDirectoryThatIsNotAClusterIsNotTouched() throws {
        let directory = try makeTemporaryDirectory("admin-e5")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: directory + "/pgdata", withIntermediateDirectories: true)
        try "precious".write(toFile: directory + "/pgdata/notes.txt", atomically: true, encoding: .utf8)
        let run = try AdminProcess.run(["--data-dir", directory, "status"])
        #expect(run.status == 2)
        #expect(run.stderr.contains("not a PostgreSQL data directory"))
        // Storage says what to do, the console which of its options does it.
        #expect(
            run.stderr.contains(
                "HINT:  Remove it if a first initialization was interrupted, or choose another data directory. "
                    + "admin takes it from --data-dir or ADMIN_DATA_DIR."), "\(run.stderr)")
        #expect(FileManager.default.fileExists(atPath: directory + "/pgdata/notes.txt"))
    }

    @Test(.enabled(if: geteuid() == 0, "only root can make a directory owned by someone else"))
    func aDataDirectoryOwnedBySomeoneElseIsRefused() throws {
        let directory = try makeTemporaryDirectory("admin-e6")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: directory + "/pgdata", withIntermediateDirectories: true)
        try "15\n".write(toFile: directory + "/pgdata/PG_VERSION", atomically: true, encoding: .utf8)
        let nobody = try #require(getpwnam("nobody"))
        #expect(chown(directory + "/pgdata", nobody.pointee.pw_uid, nobody.pointee.pw_gid) == 0)
        let run = try AdminProcess.run(["--data-dir", directory, "status"])
        #expect(run.status == 2)
        #expect(run.stderr.contains("is owned by nobody"))
        #expect(run.stderr.contains("HINT:"))
    }

    @Test func concurrentConsolesShareOneServer() throws {
        let directory = try makeTemporaryDirectory("admin-e7")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let first = try EmbeddedCluster.open(directory: directory)
        let second = try EmbeddedCluster.open(directory: directory)
        let connection = try Connection(conninfo: "", parameters: second.connectionParameters)
        first.close()
        // The second console still has its server.
        #expect(try connection.query("SELECT 1")[0].decode(Int.self, at: 0) == 1)
        #expect(serverIsRunning(in: directory))
        second.close()
        #expect(!serverIsRunning(in: directory))
    }
}

@Suite("Losing the server")
struct ServerLossTests {
    @Test func theNextCommandSaysSoAndReconnects() throws {
        let directory = try makeTemporaryDirectory("admin-lost")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (console, input, output, errors) = try AdminProcess.start([
            "--data-dir", directory, "--on-error", "continue",
        ])
        input.fileHandleForWriting.write(Data("users --format csv\n".utf8))
        var answer = Data()
        _ = output.fileHandleForReading.read(until: "uid,username", into: &answer)
        // The server goes away under the open session, as after a crash.
        let stop = try ProcessRunner(user: geteuid() == 0 ? "postgres" : nil).run(
            try ServerBinaries.locate().directory + "/pg_ctl", ["-D", directory + "/pgdata", "stop", "-m", "immediate"])
        #expect(stop.succeeded, "\(stop.output)")
        input.fileHandleForWriting.write(Data("users --format csv\nusers --format csv\n".utf8))
        try input.fileHandleForWriting.close()
        let rest = output.fileHandleForReading.readDataToEndOfFile()
        let diagnostics = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        console.waitUntilExit()
        // One command fails with the loss (exit 2 for the script), the next reconnects and answers.
        #expect(console.terminationStatus == 2)
        #expect(
            diagnostics.contains("admin:<stdin>:2: users: server closed the connection unexpectedly"), "\(diagnostics)")
        #expect(diagnostics.contains("The connection to the server was lost; reconnecting."), "\(diagnostics)")
        #expect(String(decoding: rest, as: UTF8.self) == "uid,username\n")
    }
}
