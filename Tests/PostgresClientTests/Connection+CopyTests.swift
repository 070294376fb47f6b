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

    @Test func copyOutStreamsEveryRow() throws {
        let connection = try TestPostgres.makeDatabase().connect()
        try connection.execute(
            "INSERT INTO post_likes SELECT 'p' || (i % 100), 'u' || i FROM generate_series(1, 20000) i")
        var rows = 0
        var bytes = 0
        let count = try connection.copyOut("COPY post_likes TO STDOUT") { buffer in
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
