import Foundation
import PostgresTestSupport
import Testing

@testable import PostgresClient

/// Values that have broken SQL built from strings, encodings and numeric key handling elsewhere.
let hostileStrings = [
    "it's", "\"double\"", #"back\slash\\"#, "'; DROP TABLE users; --", "$1", "\\N", "tab\there", "line\nbreak\r\n",
    "emoji 😀👩‍👩‍👧", "עברית ومرحبا RTL", "‘curly’ “quotes”", "007", "18446744073709551617", "", " ",
    "\u{7F}\u{1B}[31m", "null", "%s%n",
]

@Suite("Connection against a real PostgreSQL")
struct ConnectionTests {
    @Test func hostileValuesRoundTripThroughBindParameters() throws {
        let connection = try TestPostgres.makeDatabase().connect()
        for (index, value) in hostileStrings.enumerated() {
            try connection.execute("INSERT INTO users (uid, username) VALUES (\(value), \(value + "!\(index)"))")
        }
        for (index, value) in hostileStrings.enumerated() {
            let rows = try connection.query("SELECT uid, username FROM users WHERE uid = \(value)")
            #expect(rows.count == 1)
            #expect(try rows[0].decode(String.self, at: 0) == value)
            #expect(try rows[0].decode(String.self, named: "username") == value + "!\(index)")
        }
        #expect(try connection.query("SELECT count(*) FROM users")[0].decode(Int.self, at: 0) == hostileStrings.count)
    }

    @Test func tenMegabyteStringRoundTrips() throws {
        let connection = try TestPostgres.makeDatabase().connect()
        let big = String(repeating: "ab'\\😀\n", count: 10 * 1024 * 1024 / 9)
        try connection.execute("INSERT INTO users (uid, username) VALUES ('big', \(big))")
        try connection.copyIn("COPY users (uid, username) FROM STDIN") { writer in
            try writer.append("big-copy")
            try writer.append(big)
            try writer.endRow()
        }
        for uid in ["big", "big-copy"] {
            let stored = try connection.query("SELECT username FROM users WHERE uid = \(uid)")[0].decode(
                String.self, at: 0)
            #expect(stored == big)
        }
    }

    @Test func doublesComeBackBitForBit() throws {
        let connection = try TestPostgres.makeDatabase().connect()
        var values = [
            0.1, 374.9999999999999, 1497918951.91262, Double("5e-324")!, Double("4.9e-324")!, 1.7976931348623157e308,
            -0.0,
            1e21, 2.0.squareRoot(), Double("9007199254740993")!, -1.5e-300,
        ]
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<200 {
            values.append(Double(bitPattern: generator.next() & ~(0x7FF << 52) | (UInt64.random(in: 1...0x7FE) << 52)))
        }
        for (index, value) in values.enumerated() {
            try connection.execute(
                """
                INSERT INTO posts (owner_uid, post_key, created_at) VALUES ('u', \("p\(index)"), \(value))
                """)
        }
        for (index, value) in values.enumerated() {
            let stored = try connection.query("SELECT created_at FROM posts WHERE post_key = \("p\(index)")")[0]
                .decode(Double.self, at: 0)
            #expect(stored.bitPattern == value.bitPattern, "\(value) came back as \(stored)")
        }
    }

    @Test func nulInTextIsRefusedAndNothingIsWritten() throws {
        let connection = try TestPostgres.makeDatabase().connect()
        let error = #expect(throws: DatabaseError.self) {
            try connection.withTransaction {
                try connection.execute("INSERT INTO users (uid, username) VALUES ('ok', 'fine')")
                try connection.execute("INSERT INTO users (uid, username) VALUES ('bad', \("a\u{0}b"))")
            }
        }
        #expect(error?.kind == .invalidValue)
        #expect(error?.sqlState == .characterNotInRepertoire)
        #expect(error?.description.contains("NUL") == true)
        let copyError = #expect(throws: DatabaseError.self) {
            try connection.copyIn("COPY users (uid, username) FROM STDIN") { writer in
                try writer.append("copy-ok"); try writer.append("fine"); try writer.endRow()
                try writer.append("copy-bad"); try writer.append("x\u{0}"); try writer.endRow()
            }
        }
        #expect(copyError?.kind == .invalidValue)
        #expect(try connection.query("SELECT count(*) FROM users")[0].decode(Int.self, at: 0) == 0)
        // The connection is still usable afterwards.
        #expect(try connection.query("SELECT 1")[0].decode(Int.self, at: 0) == 1)
    }

    @Test func serverErrorsCarrySQLStateAndDiagnostics() throws {
        let connection = try TestPostgres.makeDatabase().connect()
        try connection.execute("INSERT INTO users (uid, username) VALUES ('u1', 'a')")
        let error = #expect(throws: DatabaseError.self) {
            try connection.execute("INSERT INTO users (uid, username) VALUES ('u1', \("secret-bind-value"))")
        }
        #expect(error?.kind == .server)
        #expect(error?.sqlState == .uniqueViolation)
        #expect(error?.constraint == "users_pkey")
        #expect(error?.detail?.contains("u1") == true)
        #expect(error?.statement == "INSERT INTO users (uid, username) VALUES ('u1', $1)")
        #expect(error?.description.contains("secret-bind-value") == false)
        let syntax = #expect(throws: DatabaseError.self) { try connection.execute("SELEC 1") }
        #expect(syntax?.sqlState?.rawValue == "42601")
    }

    @Test func typedDecoding() throws {
        let connection = try TestPostgres.makeDatabase().connect()
        let row = try connection.query(
            """
            SELECT 42::bigint, 'text', NULL::text, true, 1.5::float8, ARRAY['b','a c',NULL]::text[], 'Infinity'::float8
            """)[0]
        #expect(try row.decode(Int.self, at: 0) == 42)
        #expect(try row.decode(String.self, at: 1) == "text")
        #expect(try row.decode(String?.self, at: 2) == nil)
        #expect(try row.decode(Bool.self, at: 3))
        #expect(try row.decode(Double.self, at: 4) == 1.5)
        #expect(try row.decode([String?].self, at: 5) == ["b", "a c", nil])
        #expect(try row.decode(Double.self, at: 6) == .infinity)
        #expect(throws: DatabaseError.self) { try row.decode(Int.self, at: 2) }
        #expect(throws: DatabaseError.self) { try row.decode(Int.self, at: 1) }
        #expect(throws: DatabaseError.self) { try row.decode(Int.self, named: "missing") }
    }

    @Test func failedConnectionsNameTheProblemButNeverThePassword() {
        let error = #expect(throws: DatabaseError.self) {
            _ = try Connection(
                conninfo: "postgresql://someone:hunter2-secret@/nodb?host=/nonexistent-dir&connect_timeout=2")
        }
        #expect(error?.kind == .connectionFailed)
        #expect(error?.description.contains("/nonexistent-dir") == true)
        #expect(error?.description.contains("hunter2") == false)
        let malformed = #expect(throws: DatabaseError.self) {
            _ = try Connection(conninfo: "postgresql://someone:hunter2-secret@host:notaport/db")
        }
        #expect(malformed?.description.contains("hunter2") == false)
    }

    @Test func conninfoParsingFindsSettingsWithoutConnecting() {
        let options = ConnectionOptions.parse("postgresql://alice:pw@db.example:6543/app?sslmode=require")
        #expect(options?["host"] == "db.example")
        #expect(options?["port"] == "6543")
        #expect(options?["password"] == "pw")
        #expect(options?["sslmode"] == "require")
        #expect(ConnectionOptions.parse("host=/tmp dbname='a b'")?["dbname"] == "a b")
        #expect(ConnectionOptions.parse("this is not=valid'") == nil)
    }

    @Test func noticesAreCollectedNotPrinted() throws {
        let connection = try TestPostgres.makeDatabase().connect()
        try connection.execute("DO $$ BEGIN RAISE NOTICE 'hello from the server'; END $$")
        #expect(connection.takeNotices().contains { $0.contains("hello from the server") })
        #expect(connection.takeNotices().isEmpty)
    }

    @Test func cancelStopsARunningStatement() throws {
        let database = try TestPostgres.makeDatabase()
        let connection = try database.connect()
        let cancel = try #require(connection.makeCancelHandle())
        // Cancel once the statement is seen running (a request that arrives before it is lost), watching from a
        // second connection instead of guessing a delay.
        let pid = try connection.query("SELECT pg_backend_pid()")[0].decode(Int.self, at: 0)
        let conninfo = database.conninfo
        let thread = Thread {
            let watcher = try? Connection(conninfo: conninfo)
            for _ in 0..<1000 {
                let running = try? watcher?.query(
                    "SELECT state = 'active' FROM pg_stat_activity WHERE pid = \(pid) AND query LIKE 'SELECT pg_sleep%'"
                )
                if let row = running?.first, (try? row.decode(Bool.self, at: 0)) == true { break }
                usleep(10_000)
            }
            cancel.cancel()
        }
        thread.start()
        let error = #expect(throws: DatabaseError.self) { try connection.execute("SELECT pg_sleep(30)") }
        #expect(error?.sqlState == .queryCanceled)
        #expect(try connection.query("SELECT 1")[0].decode(Int.self, at: 0) == 1)
    }
}
