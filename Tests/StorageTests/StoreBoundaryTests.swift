import PostgresClient
import PostgresTestSupport
import Testing

@testable import Storage

/// Storage's API throws one error type: whatever the connection, a row or the reader underneath throw arrives
/// as a `StorageError`, at the one place Storage reaches them (`StoreConnection`, `StoreRow`).
@Suite("Storage's error boundary")
struct StoreBoundaryTests {
    @Test func aColumnThatDoesNotDecodeIsAStorageError() throws {
        let store = try makeStore()
        let row = try store.connection.query("SELECT 'not a number', NULL::text")[0]
        let error = try #require(throws: StorageError.self) { try row.decode(Int.self, at: 0) }
        #expect(error.kind == .decoding)
        #expect(error.message.contains("not a number"), "\(error)")
        #expect(throws: StorageError.self) { try row.decode(String.self, at: 1) }
        #expect(throws: StorageError.self) { try row.decode(String.self, named: "nothing") }
    }

    @Test func aServerErrorIsAStorageErrorWithItsSQLState() throws {
        let store = try makeStore()
        let error = try #require(throws: StorageError.self) { try store.connection.query("SELECT 1/0") }
        #expect(error.kind == .server)
        #expect(error.sqlState?.rawValue == "22012")
    }
}
