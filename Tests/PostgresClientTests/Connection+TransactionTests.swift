import Foundation
import PostgresTestSupport
import Testing

@testable import PostgresClient

@Suite("Transactions against a real PostgreSQL")
struct TransactionTests {
    @Test func transactionsCommitOrRollBackAsAUnit() throws {
        let connection = try TestPostgres.makeDatabase().connect()
        struct Abort: Error {}
        #expect(throws: Abort.self) {
            try connection.withTransaction {
                try connection.execute("INSERT INTO users (uid) VALUES ('rolled-back')")
                throw Abort()
            }
        }
        try connection.withTransaction {
            try connection.execute("INSERT INTO users (uid) VALUES ('kept')")
            // A failing inner block undoes only itself.
            #expect(throws: DatabaseError.self) {
                try connection.withTransaction {
                    try connection.execute("INSERT INTO users (uid) VALUES ('inner')")
                    try connection.execute("INSERT INTO users (uid) VALUES ('kept')")
                }
            }
        }
        try connection.withTransaction(rollback: true) {
            try connection.execute("INSERT INTO users (uid) VALUES ('dry-run')")
        }
        let uids = try connection.query("SELECT uid FROM users ORDER BY uid").map { try $0.decode(String.self, at: 0) }
        #expect(uids == ["kept"])
        #expect(!connection.isInTransaction)
    }

    @Test func aCaughtFailureInsideATransactionIsNotReportedAsCommitted() throws {
        let connection = try TestPostgres.makeDatabase().connect()
        #expect(throws: DatabaseError.self) {
            try connection.withTransaction(isolation: .serializable) {
                try connection.execute("INSERT INTO users (uid) VALUES ('x')")
                _ = try? connection.execute("SELECT 1/0")
            }
        }
        #expect(try connection.query("SELECT count(*) FROM users")[0].decode(Int.self, at: 0) == 0)
    }

    @Test func readOnlyTransactionsRefuseWrites() throws {
        let connection = try TestPostgres.makeDatabase().connect()
        let error = #expect(throws: DatabaseError.self) {
            try connection.withTransaction(readOnly: true) {
                try connection.execute("INSERT INTO users (uid) VALUES ('x')")
            }
        }
        #expect(error?.sqlState == .readOnlySQLTransaction)
    }
}
