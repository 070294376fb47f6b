import Storage

/// Which database the console uses, resolved once at startup in psql's spirit: an explicit `--db`, then
/// `DATABASE_URL`, then libpq's own PG* environment, and otherwise the embedded local cluster.
enum DatabaseTarget: Equatable {
    /// A conninfo string or URI, from `--db` or `DATABASE_URL`.
    case conninfo(String)
    /// libpq's environment variables alone (PGHOST, PGSERVICE …).
    case environment
    /// The private cluster in this directory.
    case embedded(directory: String)

    /// The variables whose presence means "a server is configured through libpq's environment".
    static let libpqVariables = ["PGHOST", "PGHOSTADDR", "PGPORT", "PGDATABASE", "PGUSER", "PGSERVICE"]

    /// Resolves the target from the options and the environment.
    static func resolve(options: GlobalOptions, environment: [String: String]) -> DatabaseTarget {
        if let database = options.database { return .conninfo(database) }
        if let url = environment["DATABASE_URL"], !url.isEmpty { return .conninfo(url) }
        if libpqVariables.contains(where: { environment[$0]?.isEmpty == false }) { return .environment }
        let directory =
            options.dataDirectory
            ?? environment["ADMIN_DATA_DIR"].flatMap { $0.isEmpty ? nil : $0 }
            ?? EmbeddedCluster.defaultDirectory(environment: environment)
        return .embedded(directory: directory)
    }
}
