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

    /// Two COPYs read a row at a time, interleaved, each on its own connection: every row of each, in order, and
    /// then each connection runs its next statement; a COPY that fails in the middle throws at the row where the
    /// server failed, with the server's SQLSTATE, and leaves its connection usable.
    @Test func copyOutRowsCanBePulledOneAtATime() throws {
        let database = try TestPostgres.makeDatabase()
        let first = try database.connect()
        let second = try database.connect()
        try first.beginCopyOut("COPY (SELECT 'a' || g FROM generate_series(1, 3000) g ORDER BY g) TO STDOUT")
        try second.beginCopyOut("COPY (SELECT 'b' || g FROM generate_series(1, 2000) g ORDER BY g) TO STDOUT")
        var rows: [String: [String]] = ["a": [], "b": []]
        var open = [first, second]
        while !open.isEmpty {
            for connection in open {
                guard let row = try connection.nextCopyOutRow() else {
                    open.removeAll { $0 === connection }
                    continue
                }
                let text = String(decoding: row, as: UTF8.self)
                rows[String(text.prefix(1)), default: []].append(text)
            }
        }
        #expect(rows["a"] == (1...3000).map { "a\($0)\n" })
        #expect(rows["b"] == (1...2000).map { "b\($0)\n" })
        #expect(try first.query("SELECT 1")[0].decode(Int.self, at: 0) == 1)
        #expect(try second.query("SELECT 2")[0].decode(Int.self, at: 0) == 2)

        try first.beginCopyOut("COPY (SELECT 10 / (3 - g) FROM generate_series(1, 5) g) TO STDOUT")
        var read = 0
        let error = #expect(throws: DatabaseError.self) {
            while try first.nextCopyOutRow() != nil { read += 1 }
        }
        #expect(error?.sqlState == SQLState(rawValue: "22012"), "\(String(describing: error))")
        #expect(read == 2)
        #expect(try first.query("SELECT 3")[0].decode(Int.self, at: 0) == 3)
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

    /// The binary format stores what the text format stores, for every type the import writes and the values
    /// that are hard in one or the other: escapes and quotes, NULLs, -0 and the extreme doubles, a number given as
    /// its text, the extreme integers, empty and quoted arrays, jsonb; and a NUL is refused in both.
    @Test func binaryRowsStoreWhatTextRowsStore() throws {
        let connection = try TestPostgres.makeDatabase().connect()
        let columns: Query = "id bigint, t text, j jsonb, d float8, n float8, i bigint, b boolean, a text[]"
        try connection.execute("CREATE TABLE as_text (\(columns))")
        try connection.execute("CREATE TABLE as_binary (\(columns))")
        let doubles: [Double?] = [
            nil, 0, -0.0, 0.1, .pi, -.greatestFiniteMagnitude, .leastNonzeroMagnitude, 1e300, -2.5e-8,
        ]
        let numbers = ["1.5", "1e300", "4e-320", "-2.5E-3", "123456789012345678901234567890", "0.30000000000000004"]
        let integers: [Int64?] = [nil, .min, .max, 0, -1, 9_007_199_254_740_993]
        let arrays: [[String]?] = [nil, [], ["a"], ["", "x,y", "{}", "\"q\"", #"back\slash"#, "NULL", "é 😀", "tab\t"]]
        let documents: [String?] = [nil, "{}", #"{"a": [1, 2.5, "x\ty", null, true], "b\\": {"c": "é"}}"#, "[]", "-0"]
        func encode(_ encoder: inout CopyRowEncoder) throws {
            for index in 0..<max(hostileStrings.count, doubles.count, numbers.count, arrays.count) {
                encoder.append(Int64(index))
                try encoder.append(index < hostileStrings.count ? hostileStrings[index] : nil)
                try encoder.append(jsonb: documents[index % documents.count])
                encoder.append(doubles[index % doubles.count])
                let number = numbers[index % numbers.count]
                let value = try #require(Double(number))
                number.utf8.withContiguousStorageIfAvailable { encoder.append(numberText: $0, of: value) }
                encoder.append(integers[index % integers.count])
                encoder.append(index % 3 == 0 ? nil : index % 3 == 1)
                try encoder.append(arrays[index % arrays.count])
                encoder.endRow()
            }
        }
        for (table, format) in [("as_text", CopyRowEncoder.Format.text), ("as_binary", .binary)] {
            var encoder = CopyRowEncoder(format: format)
            try encode(&encoder)
            let options: Query = format == .binary ? " WITH (FORMAT binary)" : ""
            try connection.beginCopyIn("COPY \(identifier: table) FROM STDIN\(options)")
            if format == .binary { try connection.sendCopyData(CopyRowEncoder.binaryHeader[...]) }
            try connection.sendCopyData(encoder.bytes[...])
            if format == .binary { try connection.sendCopyData(CopyRowEncoder.binaryTrailer[...]) }
            #expect(try connection.endCopyIn() == encoder.rowCount)
        }
        func rows(_ table: String) throws -> [String] {
            try connection.query(
                """
                SELECT concat_ws('|', id, t, j, d::text, n::text, i, b, a::text, t IS NULL, a IS NULL)
                FROM \(identifier: table) ORDER BY id
                """
            ).map { try $0.decode(String.self, at: 0) }
        }
        let text = try rows("as_text"), binary = try rows("as_binary")
        #expect(text.count == 18)
        #expect(binary == text)
        #expect(text.contains { $0.hasPrefix("2|") && $0.contains("|-0|") })

        for format in [CopyRowEncoder.Format.text, .binary] {
            var encoder = CopyRowEncoder(format: format)
            #expect(throws: DatabaseError.self) { try encoder.append("a\u{0}b") }
            #expect(throws: DatabaseError.self) { try encoder.append(["ok", "a\u{0}b"]) }
            #expect(throws: DatabaseError.self) { try encoder.append(jsonb: "\"a\u{0}\"") }
        }
    }
}
