import PostgresClient
import PostgresTestSupport
import Testing

@testable import Storage

@Suite("Reading COPY rows in place")
struct CopyRowTests {
    @Test func copyRowsReadAsTheServerWroteThem() throws {
        let connection = try TestPostgres.makeDatabase().connect()
        let values: [String?] = [
            "plain", nil, "", "tab\there", "new\nline", "back\\slash", "\\N", "NULL", "cr\r bs\u{8} ff\u{C} vt\u{B}",
            "ünï 😀", "trailing\\", "{\"a\",\"b\\\\c\"}",
        ]
        try connection.execute("CREATE TABLE texts (n int, text text)")
        try connection.execute(
            "INSERT INTO texts SELECT n, t FROM unnest(\(values)) WITH ORDINALITY AS v(t, n)")
        let expected = try connection.query("SELECT text FROM texts ORDER BY n").map {
            try $0.decode(String?.self, at: 0)
        }
        #expect(expected == values)
        var read: [String?] = []
        var row = CopyRow()
        try connection.copyOut("COPY (SELECT text FROM texts ORDER BY n) TO STDOUT") { line in
            row.read(line)
            read.append(row[0])
        }
        #expect(read == values)
        try connection.copyOut(#"COPY (SELECT 'a', NULL, E'b\\c', '', E'd\te') TO STDOUT"#) { line in
            row.read(line)
            #expect((0..<5).map { row[$0] } == ["a", nil, "b\\c", "", "d\te"])
            #expect(row.isNull(1) && !row.isNull(3) && row.hasText(2, equalTo: "b\\c"))
        }
    }
}
