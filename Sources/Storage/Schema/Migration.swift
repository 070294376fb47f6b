import Foundation

/// One schema migration: a file `sql/NNNN_what.sql` applied in its own transaction.
public struct Migration: Sendable, Equatable {
    /// The file's name, e.g. `0001_firebase_tree.sql`.
    public let fileName: String
    /// The file's SQL, as it was when this binary was built.
    public let sql: String

    /// Wraps a migration file's name and text.
    init(fileName: String, sql: String) {
        self.fileName = fileName
        self.sql = sql
    }

    /// The number the file name starts with; migrations apply in this order.
    public var version: Int {
        Int(fileName.prefix { $0.isNumber }) ?? 0
    }
}

/// A migration as the database recorded it in `schema_migrations`.
public struct AppliedMigration: Sendable, Equatable {
    /// The migration's number.
    public var version: Int
    /// The file name it had when it was applied.
    public var fileName: String
    /// The SHA-256 of its text when it was applied, in hex.
    public var checksum: String
    /// When it was applied, as the server printed it.
    public var appliedAt: String
}

/// Where the database's schema stands against this binary's migrations.
public struct MigrationState: Sendable {
    /// Migrations the database has, in order.
    public var applied: [AppliedMigration]
    /// Migrations this binary has and the database does not yet, in order.
    public var pending: [Migration]

    /// The number of the last applied migration, 0 for an empty database.
    public var schemaVersion: Int { applied.last?.version ?? 0 }
    /// The version the schema has once every pending migration is applied.
    public var latestVersion: Int { pending.last?.version ?? schemaVersion }
}
