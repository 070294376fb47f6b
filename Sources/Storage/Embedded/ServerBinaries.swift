import Foundation

/// The PostgreSQL server programs (initdb, pg_ctl, postgres) of one major version.
public struct ServerBinaries: Sendable, Equatable {
    /// The directory holding them.
    public let directory: String
    /// Their major version, e.g. 15.
    public let majorVersion: Int

    func path(of program: String) -> String { directory + "/" + program }

    /// Finds the server binaries: `pg_config --bindir` first, then `/usr/lib/postgresql/*/bin`, newest first.
    /// With `majorVersion`, only that version will do (an existing cluster can only run on its own).
    public static func locate(majorVersion wanted: Int? = nil) throws -> ServerBinaries {
        var found: [ServerBinaries] = []
        for directory in candidateDirectories() {
            guard
                ["postgres", "initdb", "pg_ctl"].allSatisfy({
                    FileManager.default.isExecutableFile(atPath: directory + "/" + $0)
                }), let version = try? version(of: directory)
            else { continue }
            let binaries = ServerBinaries(directory: directory, majorVersion: version)
            if wanted == nil || wanted == version { return binaries }
            found.append(binaries)
        }
        if let wanted {
            let available = found.map { "\($0.majorVersion) (\($0.directory))" }.joined(separator: ", ")
            throw StorageError(
                .cluster,
                "the data directory was created by PostgreSQL \(wanted), and its server binaries are not installed",
                detail: available.isEmpty ? nil : "installed: \(available)",
                hint:
                    "Install postgresql-\(wanted), upgrade the cluster with pg_upgrade, or use another data directory."
            ).remedied(.chooseDataDirectory)
        }
        throw StorageError(
            .cluster,
            "PostgreSQL server binaries were not found (looked at pg_config --bindir and /usr/lib/postgresql/*/bin)",
            hint: "Install them (apt-get install postgresql), or use a PostgreSQL server elsewhere."
        ).remedied(.useAnotherServer)
    }

    private static func candidateDirectories() -> [String] {
        var directories: [String] = []
        if let pgConfig = findInPath("pg_config"),
            let outcome = try? ProcessRunner().run(pgConfig, ["--bindir"]), outcome.succeeded
        {
            directories.append(outcome.output.trimmingCharacters(in: .whitespacesAndNewlines))
        }
        let root = "/usr/lib/postgresql"
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? [])
            .compactMap(Int.init).sorted(by: >)
        directories += versions.map { "\(root)/\($0)/bin" }
        return directories
    }

    /// The major version `postgres --version` reports ("postgres (PostgreSQL) 15.18 (Debian …)").
    private static func version(of directory: String) throws -> Int? {
        let outcome = try ProcessRunner().run(directory + "/postgres", ["--version"])
        guard outcome.succeeded,
            let number = outcome.output.split(separator: " ").first(where: { $0.first?.isNumber == true }),
            let major = Int(number.prefix { $0.isNumber })
        else { return nil }
        return major
    }

    static func findInPath(_ program: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        return path.split(separator: ":").map { "\($0)/\(program)" }
            .first { FileManager.default.isExecutableFile(atPath: $0) }
    }
}
