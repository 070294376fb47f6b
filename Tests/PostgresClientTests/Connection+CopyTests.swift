import Foundation
import PostgresTestSupport
import Testing

@testable import PostgresClient

@Suite("COPY against a real PostgreSQL")
struct CopyTests {
    @Test func hostileValuesRoundTripThroughCopy() throws {
        let connection = try TestPostgres.makeDatabase().connect()
        let copied = try connection.copyIn("COPY users (uid, username) FROM STDIN") { writer in
            for (index, value) in hostileStrings.enumerated() {
                try writer.append("k\(index)")
                try writer.append(value)
                try writer.endRow()
            }
        }
        #expect(copied == hostileStrings.count)
        var lines: [String] = []
        try connection.copyOut("COPY (SELECT uid FROM users ORDER BY uid) TO STDOUT") { bytes in
            lines.append(String(decoding: bytes, as: UTF8.self))
        }
        #expect(lines.count == hostileStrings.count)
        for (index, value) in hostileStrings.enumerated() {
            let rows = try connection.query("SELECT username FROM users WHERE uid = \("k\(index)")")
            #expect(try rows[0].decode(String.self, at: 0) == value)
        }
    }

    /// The encoder scans eight bytes at a time, goes straight to the first byte that may need an escape and clears
    /// a short tail by the last eight bytes: each byte COPY escapes must be escaped at any offset, before, inside
    /// and after the whole words, alone or beside another, and the bytes beside it must arrive as they were.
    @Test func escapedBytesAtEveryOffsetRoundTrip() throws {
        let connection = try TestPostgres.makeDatabase().connect()
        var values: [String] = []
        for length in 1...19 {
            for position in 0..<length {
                for special in ["\\", "\n", "\r", "\t", "\u{0E}", "\u{0D}é", "\u{1B}", "\u{01}", "\n\\", "\\é\t"] {
                    var characters = Array(repeating: "x", count: length)
                    characters[position] = special
                    values.append(characters.joined())
                }
            }
        }
        try connection.copyIn("COPY users (uid, username) FROM STDIN") { writer in
            for (index, value) in values.enumerated() {
                try writer.append("k\(index)")
                try writer.append(value)
                try writer.endRow()
            }
        }
        let rows = try connection.query("SELECT uid, username FROM users")
        var stored: [String: String] = [:]
        for row in rows { stored[try row.decode(String.self, at: 0)] = try row.decode(String.self, at: 1) }
        #expect(stored.count == values.count)
        for (index, value) in values.enumerated() {
            #expect(stored["k\(index)"] == value, "\(value.debugDescription)")
        }
    }

    @Test func copyOutStreamsEveryRow() throws {
        let connection = try TestPostgres.makeDatabase().connect()
        try connection.execute(
            "INSERT INTO followers SELECT 'p' || (i % 100), 'u' || i FROM generate_series(1, 20000) i")
        var rows = 0
        var bytes = 0
        let count = try connection.copyOut("COPY followers TO STDOUT") { buffer in
            rows += 1
            bytes += buffer.count
        }
        #expect(count == 20000)
        #expect(rows == 20000)
        #expect(bytes > 20000 * 5)
    }

    @Test func anAbortedCopyStoresNothing() throws {
        let connection = try TestPostgres.makeDatabase().connect()
        struct Abort: Error {}
        #expect(throws: Abort.self) {
            try connection.copyIn("COPY users (uid) FROM STDIN") { writer in
                for index in 0..<100_000 {
                    try writer.append("u\(index)")
                    try writer.endRow()
                }
                throw Abort()
            }
        }
        #expect(try connection.query("SELECT count(*) FROM users")[0].decode(Int.self, at: 0) == 0)
    }
}
