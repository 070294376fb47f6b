import Testing

@testable import Admin

@Suite("Output formats")
struct TableRendererTests {
    let table = ResultTable(
        columns: ["name", "rows"],
        rows: [[.text("users"), .integer(12)], [.text("post, \"likes\""), .integer(3)], [.text("ñ"), .null]])

    @Test func alignedLikePsql() {
        #expect(
            TableRenderer.render(table, as: .table) == """
                     name      | rows
                ---------------+------
                 users         |   12
                 post, "likes" |    3
                 ñ             |
                (3 rows)

                """)
    }

    @Test func expandedOneFieldPerLine() {
        #expect(
            TableRenderer.render(table, as: .expanded).hasPrefix(
                """
                -[ RECORD 1 ]
                name | users
                rows | 12
                -[ RECORD 2 ]
                """))
    }

    @Test func csvQuotesWhatNeedsIt() {
        #expect(
            TableRenderer.render(table, as: .csv) == #"""
                name,rows
                users,12
                "post, ""likes""",3
                ñ,

                """#)
    }

    @Test func jsonKeepsTypes() {
        #expect(
            TableRenderer.render(table, as: .json) == #"""
                [{"name": "users", "rows": 12}, {"name": "post, \"likes\"", "rows": 3}, {"name": "ñ", "rows": null}]

                """#)
    }

    @Test func jsonStringsAndNumbers() {
        #expect(JSONWriter.string("a\"b\\c\n\u{1}é") == #""a\"b\\c\n\u0001é""#)
        #expect(JSONWriter.number(4) == "4")
        #expect(JSONWriter.number(-0.5) == "-0.5")
        #expect(JSONWriter.number(1497918951.91262) == "1497918951.91262")
    }

    @Test func singularFooter() {
        let one = ResultTable(columns: ["a"], rows: [[.text("x")]])
        #expect(TableRenderer.render(one, as: .table).hasSuffix("(1 row)\n"))
    }
}
