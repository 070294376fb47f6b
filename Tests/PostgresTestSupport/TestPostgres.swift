import Foundation
import PostgresClient
import Storage

/// The PostgreSQL server the integration tests run against.
///
/// By default each test process starts its own throwaway cluster (an `EmbeddedCluster` in a temporary
/// directory: Unix socket only, no TCP port) on first use and stops it when the process exits. Set
/// `ADMIN_TEST_DATABASE_URL` to a conninfo of an existing server instead (the role must be allowed to create
/// databases); the tests then create and drop their own databases there.
///
/// Every test gets a fresh database, copied from a template that was migrated once.
public enum TestPostgres {
    /// A new, migrated database for one test.
    public static func makeDatabase() throws -> TestDatabase {
        let server = try sharedServer.get()
        return try makeDatabase(prefix: "test", template: server.templateName, on: server)
    }

    /// A new database holding what `original` holds (copied as a template: nothing may be connected to it).
    public static func makeDatabase(copying original: TestDatabase) throws -> TestDatabase {
        try makeDatabase(prefix: "copy", template: original.name, on: sharedServer.get())
    }

    /// A new database with no schema at all, for migration tests.
    public static func makeEmptyDatabase() throws -> TestDatabase {
        try makeDatabase(prefix: "empty", template: "template0", on: sharedServer.get())
    }

    private static func makeDatabase(prefix: String, template: String, on server: TestServer) throws -> TestDatabase {
        let name = prefix + "_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        let maintenance = try server.connect(database: nil)
        try maintenance.execute("CREATE DATABASE \(identifier: name) TEMPLATE \(identifier: template)")
        server.remember(database: name)
        return TestDatabase(name: name, conninfo: server.conninfo(database: name))
    }

    private static let sharedServer: Result<TestServer, Error> = Result { try TestServer.start() }
}

/// One test's database.
public struct TestDatabase: Sendable {
    /// The database's name.
    public let name: String
    /// A conninfo string that reaches it, for `Connection` or `admin --db`.
    public let conninfo: String

    /// A new connection to this database.
    public func connect() throws -> Connection {
        try Connection(conninfo: conninfo)
    }
}

/// The server of this test process, with its template database.
final class TestServer: @unchecked Sendable {
    /// Connection settings without a database name.
    private let settings: [(String, String)]
    let templateName: String
    private let isExternal: Bool
    /// The throwaway cluster, when the tests started one; kept open for the process's lifetime.
    private let cluster: EmbeddedCluster?
    private let lock = NSLock()
    private var databases: [String] = []

    private init(settings: [(String, String)], templateName: String, cluster: EmbeddedCluster?) {
        self.settings = settings
        self.templateName = templateName
        self.cluster = cluster
        isExternal = cluster == nil
    }

    static func start() throws -> TestServer {
        let server: TestServer
        if let url = ProcessInfo.processInfo.environment["ADMIN_TEST_DATABASE_URL"], !url.isEmpty {
            guard var settings = ConnectionOptions.parse(url) else {
                throw StorageError(.connectionFailed, "ADMIN_TEST_DATABASE_URL does not parse as a conninfo")
            }
            let maintenanceDatabase = settings.removeValue(forKey: "dbname") ?? "postgres"
            server = TestServer(
                settings: settings.sorted { $0.key < $1.key } + [("maintenance", maintenanceDatabase)],
                templateName: "admin_test_template_\(getpid())", cluster: nil)
        } else {
            removeAbandonedClusters()
            let directory = temporaryRoot + "/admin-tests-\(getpid())"
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            try String(getpid()).write(toFile: directory + "/owner.pid", atomically: true, encoding: .utf8)
            let cluster = try EmbeddedCluster.open(directory: directory)
            let settings = cluster.connectionParameters.filter { $0.0 != "dbname" }
            server = TestServer(
                settings: settings + [("maintenance", EmbeddedCluster.databaseName)],
                templateName: "admin_test_template", cluster: cluster)
        }
        current = server
        atexit { TestServer.current?.shutDown() }
        try server.createTemplate()
        return server
    }

    /// The one server, for the exit handler (a C function pointer cannot capture it).
    nonisolated(unsafe) private static var current: TestServer?

    private static let temporaryRoot = "/tmp"

    private func createTemplate() throws {
        let maintenance = try connect(database: nil)
        try maintenance.execute("DROP DATABASE IF EXISTS \(identifier: templateName)")
        try maintenance.execute("CREATE DATABASE \(identifier: templateName) TEMPLATE template0")
        remember(database: templateName)
        do {
            try Store(conninfo: "", parameters: connectionParameters(database: templateName)).migrate()
        }
    }

    func connect(database: String?) throws -> Connection {
        try Connection(conninfo: "", parameters: connectionParameters(database: database))
    }

    private func connectionParameters(database: String?) -> [(String, String)] {
        let maintenance = settings.first { $0.0 == "maintenance" }!.1
        return settings.filter { $0.0 != "maintenance" } + [("dbname", database ?? maintenance)]
    }

    /// A key=value conninfo string for `database`, values quoted as libpq requires.
    func conninfo(database: String) -> String {
        connectionParameters(database: database).map { key, value in
            key + "='" + value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "'", with: "\\'")
                + "'"
        }.joined(separator: " ")
    }

    func remember(database: String) {
        lock.withLock { databases.append(database) }
    }

    /// Drops the databases made on an external server; stops a throwaway cluster and removes its directory.
    private func shutDown() {
        if let cluster {
            cluster.close()
            try? FileManager.default.removeItem(atPath: cluster.directory)
            return
        }
        guard let maintenance = try? connect(database: nil) else { return }
        for database in lock.withLock({ databases }) {
            _ = try? maintenance.execute("DROP DATABASE IF EXISTS \(identifier: database) WITH (FORCE)")
        }
    }

    /// Clusters of earlier test processes that died without cleaning up (kill -9, a crash): stop their
    /// servers and remove them, so no run leaves processes behind for long.
    private static func removeAbandonedClusters() {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: temporaryRoot)) ?? []
        for entry in entries where entry.hasPrefix("admin-tests-") {
            let directory = temporaryRoot + "/" + entry
            guard let owner = try? String(contentsOfFile: directory + "/owner.pid", encoding: .utf8),
                let pid = Int32(owner), kill(pid, 0) != 0, errno == ESRCH
            else { continue }
            if let text = try? String(contentsOfFile: directory + "/pgdata/postmaster.pid", encoding: .utf8),
                let serverPid = Int32(text.prefix { $0 != "\n" }),
                (try? String(contentsOfFile: "/proc/\(serverPid)/comm", encoding: .utf8))?.hasPrefix("postgres") == true
            {
                kill(serverPid, SIGQUIT)
            }
            try? FileManager.default.removeItem(atPath: directory)
        }
    }
}
