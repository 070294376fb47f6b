import Foundation
internal import PostgresClient

/// A private PostgreSQL cluster in a directory of its own: created on first use, its server listening only on
/// a Unix socket inside its 0700 data directory, and stopped when the last console using it closes.
///
/// Layout of `directory`:
/// - `pgdata/`: the cluster (socket, `server.log`); owned by the `postgres` OS user when running as root,
///   because PostgreSQL refuses to run as root.
/// - `startup.lock`: held while a console starts or stops the server, so they take turns.
/// - `sessions.lock`: each open console holds it shared; whoever can take it exclusively is the last one.
///
/// ```swift
/// let cluster = try EmbeddedCluster.open(directory: EmbeddedCluster.defaultDirectory())
/// let connection = try Connection(conninfo: "", parameters: cluster.connectionParameters)
/// cluster.close()
/// ```
public final class EmbeddedCluster {
    /// The directory that holds the cluster and its locks.
    public let directory: String
    /// The cluster's major version (`PG_VERSION`), nil until `initdb` made it.
    private let majorVersion: Int?
    /// The server programs, once something needed them.
    private var located: ServerBinaries?
    /// The role the console connects as: the OS user's own name, authenticated by peer.
    public let roleName: String
    /// The database the console uses.
    public static let databaseName = "admin"
    /// The socket's port number (it names the socket file; there is no TCP listener).
    public static let port = 5432

    private let runner: ProcessRunner
    private var sessionLock: FileLock?

    /// The cluster's data directory (PGDATA), which also holds the socket.
    public var dataDirectory: String { directory + "/pgdata" }

    /// libpq parameters that reach this cluster's database.
    public var connectionParameters: [(String, String)] {
        [("host", dataDirectory), ("port", String(Self.port)), ("user", roleName), ("dbname", Self.databaseName)]
    }

    private init(directory: String, majorVersion: Int?, roleName: String, runner: ProcessRunner) {
        self.directory = directory
        self.majorVersion = majorVersion
        self.roleName = roleName
        self.runner = runner
    }

    deinit { close() }

    /// The per-user default: `$XDG_DATA_HOME/makestagram-admin` (or `~/.local/share/makestagram-admin`);
    /// for root `/var/lib/makestagram-admin`, since root's home is closed to the server's OS user.
    public static func defaultDirectory(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if geteuid() == 0 { return "/var/lib/makestagram-admin" }
        if let xdg = environment["XDG_DATA_HOME"], xdg.hasPrefix("/") { return xdg + "/makestagram-admin" }
        let home = environment["HOME"] ?? NSHomeDirectory()
        return home + "/.local/share/makestagram-admin"
    }

    /// Opens the cluster in `directory`: creates it on first use, starts its server unless another console
    /// already did, and creates the console's database. Recovers by itself from a stale `postmaster.pid`.
    public static func open(directory: String) throws -> EmbeddedCluster {
        let directory = URL(fileURLWithPath: directory).standardizedFileURL.path
        let serverUser = geteuid() == 0 ? "postgres" : nil
        let runner = ProcessRunner(user: serverUser)
        try createBaseDirectory(directory, openToServerUser: serverUser != nil)
        let startupLock = try FileLock(path: directory + "/startup.lock")
        _ = try startupLock.lock(exclusive: true, wait: true)
        // Held until the session lock is taken, so no other console stops the server in between.
        return try withExtendedLifetime(startupLock) {
            try openLocked(directory: directory, serverUser: serverUser, runner: runner)
        }
    }

    private static func openLocked(directory: String, serverUser: String?, runner: ProcessRunner) throws
        -> EmbeddedCluster
    {
        let dataDirectory = directory + "/pgdata"
        let existingVersion = try clusterVersion(at: dataDirectory)
        let cluster = EmbeddedCluster(
            directory: directory, majorVersion: existingVersion, roleName: try currentUserName(), runner: runner)
        try cluster.checkSocketPathLength()
        let isRunning = try cluster.isServerRunning()
        // A server to start needs the programs of the cluster's version: when they are missing, that comes first.
        if !isRunning { _ = try cluster.binaries() }
        if existingVersion == nil {
            try cluster.initialize(serverUser: serverUser)
        } else {
            try cluster.checkOwnership(serverUser: serverUser)
        }
        if !isRunning {
            // The watchdog first: a console stopped (SIGTERM, SIGKILL) while the server starts leaves no one to
            // stop it, and the watchdog does once the startup lock is free.
            _ = try FileLock(path: directory + "/sessions.lock")  // exists for the watchdog to try
            try cluster.startWatchdog()
            try cluster.startServer()
        }
        try cluster.createDatabaseIfMissing()
        let sessionLock = try FileLock(path: directory + "/sessions.lock")
        _ = try sessionLock.lock(exclusive: false, wait: true)
        cluster.sessionLock = sessionLock
        return cluster
    }

    /// The server programs of the cluster's version, found on first need: a console whose server another one
    /// started runs none of them (finding them runs `pg_config` and `postgres --version`).
    public func binaries() throws -> ServerBinaries {
        if let located { return located }
        let binaries = try ServerBinaries.locate(majorVersion: majorVersion)
        located = binaries
        return binaries
    }

    /// Ends this console's use of the cluster and stops the server if no other console uses it.
    /// Safe to call more than once. A console killed without closing leaves the server running for the next.
    public func close() {
        guard sessionLock != nil else { return }
        guard let startupLock = try? FileLock(path: directory + "/startup.lock"),
            (try? startupLock.lock(exclusive: true, wait: true)) == true
        else {
            sessionLock = nil
            return
        }
        withExtendedLifetime(startupLock) {
            sessionLock = nil
            if let sessions = try? FileLock(path: directory + "/sessions.lock"),
                (try? sessions.lock(exclusive: true, wait: false)) == true
            {
                _ = try? stopServer()
            }
        }
    }

    // MARK: Creating

    private static func createBaseDirectory(_ directory: String, openToServerUser: Bool) throws {
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            // Root's base directory must let the server user through to pgdata (which is itself 0700).
            try FileManager.default.setAttributes(
                [.posixPermissions: openToServerUser ? 0o711 : 0o700], ofItemAtPath: directory)
        } catch {
            throw StorageError(
                .cluster, "cannot create the data directory \(directory): \(error.localizedDescription)",
                hint: "Choose another data directory."
            ).remedied(.chooseDataDirectory)
        }
    }

    /// The major version in `PG_VERSION`, or nil when there is no cluster yet.
    private static func clusterVersion(at dataDirectory: String) throws -> Int? {
        let versionFile = dataDirectory + "/PG_VERSION"
        guard FileManager.default.fileExists(atPath: versionFile) else {
            let contents = (try? FileManager.default.contentsOfDirectory(atPath: dataDirectory)) ?? []
            guard contents.isEmpty else {
                throw StorageError(
                    .cluster, "\(dataDirectory) exists but is not a PostgreSQL data directory (no PG_VERSION)",
                    hint: "Remove it if a first initialization was interrupted, or choose another data directory."
                ).remedied(.chooseDataDirectory)
            }
            return nil
        }
        guard let text = try? String(contentsOfFile: versionFile, encoding: .utf8),
            let version = Int(text.trimmingCharacters(in: .whitespacesAndNewlines))
        else {
            throw StorageError(.cluster, "cannot read \(versionFile)")
        }
        return version
    }

    private func initialize(serverUser: String?) throws {
        try FileManager.default.createDirectory(atPath: dataDirectory, withIntermediateDirectories: true)
        if let serverUser {
            guard let account = getpwnam(serverUser) else {
                throw StorageError(
                    .cluster, "PostgreSQL cannot run as root, and there is no '\(serverUser)' OS user to run it as",
                    hint: "Create one (useradd --system \(serverUser)), or run admin as an ordinary user.")
            }
            guard chown(dataDirectory, account.pointee.pw_uid, account.pointee.pw_gid) == 0 else {
                throw StorageError(
                    .cluster, "cannot hand \(dataDirectory) to \(serverUser): \(String(cString: strerror(errno)))")
            }
        }
        try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: dataDirectory)
        let outcome = try runner.run(
            try binaries().path(of: "initdb"),
            [
                "--pgdata=\(dataDirectory)", "--username=\(roleName)", "--encoding=UTF8", "--locale=C",
                "--auth-local=peer", "--auth-host=reject", "--no-instructions",
            ])
        guard outcome.succeeded else {
            throw StorageError(
                .cluster, "initdb failed for \(dataDirectory)", detail: outcome.output,
                hint: serverUser.map { "The '\($0)' OS user must be able to reach \(directory)." })
        }
        try appendSettings()
    }

    /// No TCP listener; the socket lives in the 0700 data directory; room for large imports.
    private func appendSettings() throws {
        let quotedDirectory = "'" + dataDirectory.replacingOccurrences(of: "'", with: "''") + "'"
        let settings = """

            # Added by admin: a private cluster reachable only through its own Unix socket.
            listen_addresses = ''
            unix_socket_directories = \(quotedDirectory)
            unix_socket_permissions = 0700
            port = \(Self.port)
            max_wal_size = '4GB'
            checkpoint_timeout = '15min'

            """
        let path = dataDirectory + "/postgresql.conf"
        guard let handle = FileHandle(forWritingAtPath: path) else {
            throw StorageError(.cluster, "cannot write \(path)")
        }
        defer { try? handle.close() }
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(settings.utf8))
    }

    private func checkSocketPathLength() throws {
        // sockaddr_un holds 108 bytes, including the terminating NUL.
        let socketPath = dataDirectory + "/.s.PGSQL.\(Self.port)"
        guard socketPath.utf8.count < 108 else {
            throw StorageError(
                .cluster,
                "the data directory's path is too long for a Unix socket (\(socketPath.utf8.count) bytes, at most 107)",
                hint: "Choose a data directory with a shorter path."
            ).remedied(.chooseDataDirectory)
        }
    }

    private func checkOwnership(serverUser: String?) throws {
        var info = stat()
        guard stat(dataDirectory, &info) == 0 else {
            throw StorageError(.cluster, "cannot read \(dataDirectory): \(String(cString: strerror(errno)))")
        }
        let expected = serverUser.flatMap { getpwnam($0)?.pointee.pw_uid } ?? geteuid()
        guard info.st_uid == expected else {
            let owner = getpwuid(info.st_uid).map { String(cString: $0.pointee.pw_name) } ?? "uid \(info.st_uid)"
            let runner = serverUser ?? (try? Self.currentUserName()) ?? "you"
            throw StorageError(
                .cluster,
                "the data directory \(dataDirectory) is owned by \(owner), but its server would run as \(runner)",
                hint: "Use a data directory of your own, or run admin as \(owner)."
            ).remedied(.chooseDataDirectory)
        }
    }

    // MARK: Running

    /// Whether a server runs on this data directory; removes a `postmaster.pid` left by a server that is gone.
    private func isServerRunning() throws -> Bool {
        let pidFile = dataDirectory + "/postmaster.pid"
        guard let text = try? String(contentsOfFile: pidFile, encoding: .utf8) else { return false }
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        if let pid = lines.first.flatMap({ Int32($0.trimmingCharacters(in: .whitespaces)) }), pid > 0,
            Self.isPostgresProcess(pid)
        {
            return true
        }
        // The server died without removing its lock file (kill -9, power loss): the file is stale.
        do {
            try FileManager.default.removeItem(atPath: pidFile)
        } catch {
            throw StorageError(
                .cluster, "cannot remove the stale \(pidFile): \(error.localizedDescription)",
                hint: "No server runs on this data directory; remove the file by hand.")
        }
        return false
    }

    /// A live process whose command is postgres (a recycled pid of another program does not count).
    static func isPostgresProcess(_ pid: Int32) -> Bool {
        guard kill(pid, 0) == 0 || errno == EPERM else { return false }
        guard let command = try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8) else {
            return true
        }
        let name = command.trimmingCharacters(in: .whitespacesAndNewlines)
        return name == "postgres" || name == "postmaster"
    }

    private func startServer() throws {
        let logFile = dataDirectory + "/server.log"
        let outcome = try runner.run(
            try binaries().path(of: "pg_ctl"),
            [
                "--pgdata=\(dataDirectory)", "--log=\(logFile)", "--wait", "--timeout=300", "--silent", "start",
            ])
        guard outcome.succeeded else {
            let log = (try? String(contentsOfFile: logFile, encoding: .utf8)) ?? ""
            let tail = log.split(separator: "\n").suffix(15).joined(separator: "\n")
            throw StorageError(
                .cluster, "the embedded PostgreSQL server in \(dataDirectory) did not start",
                detail: [outcome.output, tail].filter { !$0.isEmpty }.joined(separator: "\n"),
                hint: "See \(logFile).")
        }
    }

    /// Starts a small shell process, before the server, that stops the server once no console uses it: a console
    /// killed with SIGKILL (or a machine's OOM killer), or stopped while the server was still starting, cannot
    /// close itself, and its server would otherwise run on. Each second the watchdog tries the startup lock and
    /// then the sessions lock exclusively, both without waiting, exactly as a closing console does; while a
    /// console is starting (it holds the startup lock) it waits; when it gets both, no console is open and none is
    /// starting, so it stops the server. It exits when no server runs and no console is starting, whoever
    /// stopped it, or when the cluster's directory is gone. It runs in its own session, detached from the terminal, so that closing the terminal does not
    /// take it down first.
    private func startWatchdog() throws {
        var stop = [
            try binaries().path(of: "pg_ctl"), "--pgdata=\(dataDirectory)", "--mode=fast", "--wait", "--silent", "stop",
        ]
        if let user = runner.user {
            stop = [try ProcessRunner.runuserPath(), "-u", user, "--", "/usr/bin/env", "--chdir=/"] + stop
        }
        let script = """
            dir=$1; shift
            while sleep 1; do
              [ -f "$dir/startup.lock" ] || exit 0
              (
                flock -x -n 4 || exit 1
                [ -f "$dir/pgdata/postmaster.pid" ] || exit 0
                flock -x -n 3 && "$@"
              ) 3<"$dir/sessions.lock" 4<"$dir/startup.lock" && exit 0
            done
            """
        let quoted = ([script, "admin-watchdog", directory] + stop).map {
            "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'"
        }
        // The outer shell returns at once; the watchdog, in a session of its own, outlives it and this console.
        let outcome = try ProcessRunner(user: nil).run(
            "/bin/sh",
            [
                "-c", "setsid /bin/sh -c \(quoted.joined(separator: " ")) </dev/null >/dev/null 2>&1 &",
            ])
        guard outcome.succeeded else {
            throw StorageError(.cluster, "cannot start the embedded server's watchdog", detail: outcome.output)
        }
    }

    private func stopServer() throws {
        let outcome = try runner.run(
            try binaries().path(of: "pg_ctl"),
            [
                "--pgdata=\(dataDirectory)", "--mode=fast", "--wait", "--silent", "stop",
            ])
        guard outcome.succeeded else {
            throw StorageError(.cluster, "the embedded server did not stop", detail: outcome.output)
        }
    }

    private func createDatabaseIfMissing() throws {
        var parameters = connectionParameters
        parameters.removeAll { $0.0 == "dbname" }
        let maintenance = StoreConnection(
            try StorageError.converting {
                try Connection(conninfo: "", parameters: parameters + [("dbname", "postgres")])
            })
        let exists = try maintenance.query("SELECT 1 FROM pg_database WHERE datname = \(Self.databaseName)")
        if exists.isEmpty {
            try maintenance.execute("CREATE DATABASE \(identifier: Self.databaseName)")
        }
    }

    static func currentUserName() throws -> String {
        guard let account = getpwuid(geteuid()) else {
            throw StorageError(.cluster, "the current OS user (uid \(geteuid())) has no name")
        }
        return String(cString: account.pointee.pw_name)
    }
}
