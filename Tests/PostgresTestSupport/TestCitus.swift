import Foundation
import PostgresClient
import Storage

/// A Citus cluster for the Citus tests: a coordinator and two workers, started by the test process on first use
/// (three throwaway clusters on Unix sockets in one private directory) when the PostgreSQL server binaries have
/// the citus extension, and stopped when the process exits. Without Citus, `unavailableReason` says why and the
/// Citus suites are skipped.
public enum TestCitus {
    /// Why there is no Citus cluster to test against, or nil when there is one.
    public static var unavailableReason: String? { available.reason }

    /// Whether the Citus tests can run here.
    public static var isAvailable: Bool { available.reason == nil }

    /// A new database on every node, with the citus extension and the workers added on the coordinator; no schema.
    /// With `coordinatorInMetadata` (`citus_set_coordinator_host`) the coordinator is a node of the metadata too,
    /// and Citus takes a `LOCK TABLE`'s locks there before the workers'; without it (as a cluster made by
    /// `citus_add_node` alone is), the workers' first.
    public static func makeDatabase(coordinatorInMetadata: Bool = true) throws -> CitusDatabase {
        let cluster = try sharedCluster.get()
        return try cluster.makeDatabase(coordinatorInMetadata: coordinatorInMetadata)
    }

    private static let available: (reason: String?, bin: String?) = {
        guard let bin = ServerBinariesProbe.binDirectory() else {
            return ("no PostgreSQL server binaries found", nil)
        }
        let library = ServerBinariesProbe.pkgLibDirectory(bin: bin) ?? (bin + "/../lib")
        guard FileManager.default.fileExists(atPath: library + "/citus.so") else {
            return ("the PostgreSQL server in \(bin) has no citus extension (\(library)/citus.so)", bin)
        }
        return (nil, bin)
    }()

    private static let sharedCluster: Result<CitusTestCluster, Error> = Result {
        guard available.reason == nil, let bin = available.bin else {
            throw StorageError(.cluster, "Citus is not available: \(available.reason ?? "")")
        }
        return try CitusTestCluster.start(bin: bin)
    }
}

/// One Citus test's database: the same name on the coordinator and on both workers.
public struct CitusDatabase: Sendable {
    /// The database's name.
    public let name: String
    /// A conninfo of the coordinator's database, for `Store` or `admin --db`.
    public let coordinator: String
    /// Conninfos of the workers' databases.
    public let workers: [String]

    /// A new connection to the coordinator's database.
    public func connect() throws -> Connection {
        try Connection(conninfo: coordinator)
    }
}

/// Finds the server binaries' directories without the Storage internals.
enum ServerBinariesProbe {
    static func binDirectory() -> String? {
        (try? ServerBinaries.locate())?.directory
    }

    static func pkgLibDirectory(bin: String) -> String? {
        guard let output = run(bin + "/pg_config", ["--pkglibdir"]) else { return nil }
        let path = output.trimmingCharacters(in: .whitespacesAndNewlines)
        return path.isEmpty ? nil : path
    }

    /// Runs a program and returns what it printed, or nil when it could not run or failed. Through Storage's
    /// runner: Foundation's `Process` hangs when the program daemonizes a server.
    static func run(_ program: String, _ arguments: [String], as user: String? = nil) -> String? {
        guard let outcome = try? ProcessRunner(user: user).run(program, arguments), outcome.succeeded else {
            return nil
        }
        return outcome.output
    }
}

/// The three servers of the test process's Citus cluster.
final class CitusTestCluster: @unchecked Sendable {
    let directory: String
    let bin: String
    let serverUser: String?
    let roleName: String
    static let ports = [5432, 5433, 5434]
    var socketDirectory: String { directory + "/sockets" }

    private init(directory: String, bin: String, serverUser: String?, roleName: String) {
        self.directory = directory
        self.bin = bin
        self.serverUser = serverUser
        self.roleName = roleName
    }

    static func start(bin: String) throws -> CitusTestCluster {
        removeAbandoned()
        let directory = "/tmp/admin-citus-\(getpid())"
        let serverUser = geteuid() == 0 ? "postgres" : nil
        let roleName = String(cString: getpwuid(geteuid()).pointee.pw_name)
        let cluster = CitusTestCluster(directory: directory, bin: bin, serverUser: serverUser, roleName: roleName)
        try FileManager.default.createDirectory(atPath: cluster.socketDirectory, withIntermediateDirectories: true)
        try String(getpid()).write(toFile: directory + "/owner.pid", atomically: true, encoding: .utf8)
        if let serverUser, let account = getpwnam(serverUser) {
            for path in [directory, cluster.socketDirectory] {
                chown(path, account.pointee.pw_uid, account.pointee.pw_gid)
            }
        }
        current = cluster
        atexit { CitusTestCluster.current?.stop() }
        for (index, port) in ports.enumerated() {
            try cluster.startNode(named: "node\(index)", port: port)
        }
        return cluster
    }

    nonisolated(unsafe) private static var current: CitusTestCluster?

    private func startNode(named name: String, port: Int) throws {
        let data = directory + "/" + name
        guard
            ServerBinariesProbe.run(
                bin + "/initdb",
                [
                    "--pgdata=\(data)", "--username=\(roleName)", "--encoding=UTF8", "--locale=C",
                    // Only the owner (and root) can reach the socket directory, and the nodes connect to each
                    // other as the test's role.
                    "--auth-local=trust", "--auth-host=reject", "--no-instructions",
                ], as: serverUser) != nil
        else { throw StorageError(.cluster, "initdb failed for the Citus test node \(data)") }
        let settings = """

            listen_addresses = ''
            unix_socket_directories = '\(socketDirectory)'
            port = \(port)
            shared_preload_libraries = 'citus'
            fsync = off
            synchronous_commit = off
            full_page_writes = off
            max_connections = 150
            # Test stores are small: without this, Citus reaches a worker's shards over one connection and the
            # tests miss what large stores meet (a repair refused after its checks read over several).
            citus.force_max_query_parallelization = on
            unix_socket_permissions = 0700

            """
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: data + "/postgresql.conf"))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(settings.utf8))
        try handle.close()
        guard
            ServerBinariesProbe.run(
                bin + "/pg_ctl", ["--pgdata=\(data)", "--log=\(data)/server.log", "--wait", "--silent", "start"],
                as: serverUser) != nil
        else { throw StorageError(.cluster, "the Citus test node \(data) did not start (see \(data)/server.log)") }
    }

    func conninfo(port: Int, database: String) -> String {
        "host='\(socketDirectory)' port=\(port) user='\(roleName)' dbname='\(database)'"
    }

    /// Held while a database is made: `citus_add_node` copies the roles to the worker (`ALTER ROLE`), and two
    /// databases adding the same worker at once fail one of them with "tuple concurrently updated" (roles are
    /// shared by every database of a node).
    private static let creation = NSLock()

    func makeDatabase(coordinatorInMetadata: Bool) throws -> CitusDatabase {
        Self.creation.lock()
        defer { Self.creation.unlock() }
        let name = "citus_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        for port in Self.ports {
            let maintenance = try Connection(conninfo: conninfo(port: port, database: "postgres"))
            try maintenance.execute("CREATE DATABASE \(identifier: name)")
            try Connection(conninfo: conninfo(port: port, database: name)).execute("CREATE EXTENSION citus")
        }
        let coordinator = try Connection(conninfo: conninfo(port: Self.ports[0], database: name))
        if coordinatorInMetadata {
            try coordinator.execute("SELECT citus_set_coordinator_host(\(socketDirectory), \(Self.ports[0])::int)")
        }
        for port in Self.ports.dropFirst() {
            try coordinator.execute("SELECT citus_add_node(\(socketDirectory), \(port)::int)")
        }
        return CitusDatabase(
            name: name, coordinator: conninfo(port: Self.ports[0], database: name),
            workers: Self.ports.dropFirst().map { conninfo(port: $0, database: name) })
    }

    private func stop() {
        for index in Self.ports.indices {
            _ = ServerBinariesProbe.run(
                bin + "/pg_ctl", ["--pgdata=\(directory)/node\(index)", "--mode=immediate", "--wait", "stop"],
                as: serverUser)
        }
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Clusters of earlier test processes that died without stopping them.
    private static func removeAbandoned() {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/tmp")) ?? []
        for entry in entries where entry.hasPrefix("admin-citus-") {
            let directory = "/tmp/" + entry
            guard let owner = try? String(contentsOfFile: directory + "/owner.pid", encoding: .utf8),
                let pid = Int32(owner), kill(pid, 0) != 0, errno == ESRCH
            else { continue }
            for index in ports.indices {
                if let text = try? String(contentsOfFile: "\(directory)/node\(index)/postmaster.pid", encoding: .utf8),
                    let serverPid = Int32(text.prefix { $0 != "\n" }),
                    (try? String(contentsOfFile: "/proc/\(serverPid)/comm", encoding: .utf8))?.hasPrefix("postgres")
                        == true
                {
                    kill(serverPid, SIGQUIT)
                }
            }
            try? FileManager.default.removeItem(atPath: directory)
        }
    }
}
