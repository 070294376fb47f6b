import Foundation
internal import PostgresClient

/// Applies `sql/` migrations in order, each in its own transaction, and records them with a checksum in
/// `schema_migrations`. Refuses to go on when an applied file has changed since, or when the database has
/// migrations this binary does not know (a newer `admin` applied them).
///
/// ```swift
/// let applied = try store.migrate()
/// ```
struct Migrator: Sendable {
    /// The migrations, in order.
    let migrations: [Migration]

    /// A migrator for the given migrations; by default the ones embedded in this binary from `sql/`.
    init(migrations: [Migration] = Migration.embedded) {
        self.migrations = migrations.sorted { $0.version < $1.version }
    }

    /// Serializes migrators across consoles: two starting at once must not both apply a file.
    /// (An arbitrary constant, unique to this application.)
    static let advisoryLockKey: Int64 = 0x6D_6967_7261_7465

    /// Where the database stands; throws `.migration` when it disagrees with this binary.
    func state(on connection: StoreConnection) throws -> MigrationState {
        let applied = try appliedMigrations(on: connection)
        let checksums = try self.checksums(on: connection)
        for (index, record) in applied.enumerated() {
            guard index < migrations.count else {
                throw StorageError(
                    .migration,
                    "the database has migration \(record.fileName), which this admin does not know",
                    hint: "A newer version of admin migrated this database; use that version.")
            }
            let migration = migrations[index]
            guard migration.version == record.version, migration.fileName == record.fileName else {
                throw StorageError(
                    .migration,
                    "the applied migrations are not a prefix of sql/: the database has \(record.fileName) where this admin expects \(migration.fileName)",
                    hint: "Migration files must never be renamed, removed or inserted before applied ones.")
            }
            guard checksums[index] == record.checksum else {
                throw StorageError(
                    .migration, "migration \(record.fileName) was changed after it was applied",
                    detail: "applied checksum \(record.checksum), file checksum \(checksums[index])",
                    hint: "Released migrations are never edited: restore the file and add a new migration instead.")
            }
        }
        return MigrationState(applied: applied, pending: Array(migrations.dropFirst(applied.count)))
    }

    /// Applies every pending migration and returns those it applied (none when the schema is current).
    @discardableResult
    func migrate(on connection: StoreConnection) throws -> [Migration] {
        var appliedNow: [Migration] = []
        for migration in try state(on: connection).pending {
            let wasApplied = try connection.withTransaction {
                try connection.execute("SELECT pg_advisory_xact_lock(\(Self.advisoryLockKey))")
                try createBookkeeping(on: connection)
                // Another console may have applied it while we waited for the lock.
                let state = try self.state(on: connection)
                guard state.pending.first == migration else { return false }
                do {
                    try connection.execute(script: migration.sql)
                } catch let error as StorageError {
                    throw error.adding(context: "applying migration \(migration.fileName)")
                }
                try connection.execute(
                    """
                    INSERT INTO schema_migrations (version, file_name, checksum)
                    VALUES (\(migration.version), \(migration.fileName),
                            encode(sha256(convert_to(\(migration.sql), 'UTF8')), 'hex'))
                    """)
                return true
            }
            if wasApplied { appliedNow.append(migration) }
        }
        return appliedNow
    }

    private func createBookkeeping(on connection: StoreConnection) throws {
        try connection.execute(
            """
            CREATE TABLE IF NOT EXISTS schema_migrations (
                version     integer PRIMARY KEY,
                file_name   text NOT NULL,
                checksum    text NOT NULL,
                applied_at  timestamptz NOT NULL DEFAULT now()
            )
            """)
    }

    private func appliedMigrations(on connection: StoreConnection) throws -> [AppliedMigration] {
        let exists = try connection.query("SELECT to_regclass('schema_migrations') IS NOT NULL")
        guard try exists[0].decode(Bool.self, at: 0) else { return [] }
        let rows = try connection.query(
            """
            SELECT version, file_name, checksum, applied_at::text FROM schema_migrations ORDER BY version
            """)
        return try rows.map { row in
            AppliedMigration(
                version: try row.decode(at: 0), fileName: try row.decode(at: 1), checksum: try row.decode(at: 2),
                appliedAt: try row.decode(at: 3))
        }
    }

    /// SHA-256 of each migration's text, computed by the server (no crypto dependency in the client).
    private func checksums(on connection: StoreConnection) throws -> [String] {
        let rows = try connection.query(
            """
            SELECT encode(sha256(convert_to(sql, 'UTF8')), 'hex')
            FROM unnest(\(migrations.map(\.sql))) WITH ORDINALITY AS m(sql, position)
            ORDER BY position
            """)
        return try rows.map { try $0.decode(String.self, at: 0) }
    }
}
