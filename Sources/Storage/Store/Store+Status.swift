import Foundation
internal import PostgresClient

extension Store {
    /// Whether no table of the tree holds a row; quick on any size.
    public func isEmpty() throws -> Bool {
        try treeRows.isEmpty()
    }

    /// The server, the schema version and exact row counts per table, the counts of one instant.
    public func status() throws -> StoreStatus {
        try StatusReading(
            connection: connection, reads: reads, maintenance: maintenance, distribution: distribution
        ).status(at: migrationState())
    }
}
