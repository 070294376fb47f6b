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
        #expect(error.sqlStateCode == "22012")
        #expect(error.message == "division by zero")
        #expect(error.statement == "SELECT 1/0")
    }

    /// The error wraps what the layer below threw: its diagnostics show through, and Storage's rewording of a
    /// field (set even to nil) wins over the cause's.
    @Test func aWrappedErrorKeepsItsCauseAndTakesRewording() throws {
        let store = try makeStore()
        var error = try #require(throws: StorageError.self) { try store.connection.query("SELECT 1/0") }
        guard case .database(let cause) = error.cause else {
            Issue.record("no database error underneath: \(error)")
            return
        }
        #expect(cause.sqlState?.rawValue == "22012")
        error.statement = nil
        error.hint = "Divide by something else."
        #expect(error.statement == nil)
        #expect(error.description.contains("HINT:  Divide by something else."), "\(error)")
        let tree = StorageError(TreeError(.malformedInput, "unexpected end", position: nil, path: "backup.json"))
        #expect(tree.kind == .malformedInput)
        #expect(tree.context == "reading backup.json")
        #expect(tree.adding(context: "import").context == "import: reading backup.json")
    }
}
