import Testing

@testable import PostgresClient

@Suite("Query rendering (no server)")
struct QueryTests {
    @Test func interpolatedValuesBecomeParameters() {
        let uid = "'; DROP TABLE users; --"
        let limit = 10
        let query: Query = "SELECT username FROM users WHERE uid = \(uid) LIMIT \(limit)"
        #expect(query.sql == "SELECT username FROM users WHERE uid = $1 LIMIT $2")
        #expect(query.binds == [uid, "10"])
    }

    @Test func fragmentsAreRenumberedWhereTheyLand() {
        let condition: Query = "uid = \(" alice") AND n > \(3)"
        let query: Query = "SELECT \(1) FROM t WHERE \(condition) LIMIT \(9)"
        #expect(query.sql == "SELECT $1 FROM t WHERE uid = $2 AND n > $3 LIMIT $4")
        #expect(query.binds == ["1", " alice", "3", "9"])
        // Two-digit numbers, in the fragment and before it.
        let wide: Query = (0..<12).map { "c\($0) = \($0)" as Query }.joined(separator: " AND ")
        #expect(wide.sql.hasSuffix("c$21 = $22 AND c$23 = $24"))
        let both = ("SELECT \(true), \(false), \(true)" as Query) + " WHERE " + wide
        #expect(both.binds.count == 27)
        #expect(both.sql.hasPrefix("SELECT $1, $2, $3 WHERE c$4 = $5 AND c$6 = $7"))
        #expect(both.sql.hasSuffix("c$24 = $25 AND c$26 = $27"))
        #expect(both.binds.suffix(2) == ["11", "11"])
    }

    @Test func trustedTextThatLooksLikeAPlaceholderIsLeftAlone() {
        let value = "x"
        let query = Query(unsafeSQL: "SELECT '$1', $$a $2$$, ") + "\(value)"
        #expect(query.sql == "SELECT '$1', $$a $2$$, $1")
        #expect(query.binds == ["x"])
        let declared: Query = "DECLARE \(identifier: "c") CURSOR FOR \("SELECT \(5)" as Query)"
        #expect(declared.sql == #"DECLARE "c" CURSOR FOR SELECT $1"# && declared.binds == ["5"])
        let fetch = Query.fetch(forward: 64, from: #"export "1""#)
        #expect(fetch.sql == #"FETCH FORWARD 64 FROM "export ""1""""# && fetch.binds.isEmpty)
        #expect([Query]().joined(separator: ", ").sql.isEmpty)
    }

    @Test func descriptionNeverShowsValues() {
        let password = "s3cret-value"
        let query: Query = "SELECT \(password)"
        #expect(query.description == "SELECT $1")
        #expect(!String(describing: query).contains(password))
    }

    @Test func identifiersAreQuotedAndEscaped() {
        let query: Query = "SELECT * FROM \(identifier: "we\"ird table")"
        #expect(query.sql == #"SELECT * FROM "we""ird table""#)
        #expect(Query.identifiers(["a", "b\"c"]).sql == #""a", "b""c""#)
        #expect(Query.identifiers([String]()).sql.isEmpty)
    }

    @Test func nullsAndOptionals() {
        let missing: String? = nil
        let present: Int? = 4
        let query: Query = "VALUES (\(missing), \(present))"
        #expect(query.binds == [nil, "4"])
        #expect(query.types == [.text, .bigint])
    }

    @Test func parametersCarryTheirTypeThroughComposition() {
        let flags: [Bool] = [true]
        let inner: Query = "\(1.5) < \(Int32(2)) AND \(flags) <> \(JSONText("{}"))"
        let query: Query = "SELECT \(["a"]), \(Int64(3)) WHERE \(inner)"
        #expect(query.types == [.textArray, .bigint, .doublePrecision, .integer, .booleanArray, .jsonb])
        #expect([[Double]].postgresType == .doublePrecisionArray)
    }

    @Test func doublesUseShortestRoundTrippingText() {
        for value in [0.1, 374.9999999999999, 1497918951.91262, Double("5e-324")!, 1.7976931348623157e308, -0.0, 1e21] {
            let text = value.queryText!
            #expect(Double(text)!.bitPattern == value.bitPattern, "\(value) -> \(text)")
        }
        #expect(Double.nan.queryText == "NaN")
        #expect((-Double.infinity).queryText == "-Infinity")
    }

    @Test func arraysBecomeQuotedLiterals() {
        let members = ["uid_1", "with \"quote\"", "back\\slash", "NULL"]
        #expect(members.queryText == #"{"uid_1","with \"quote\"","back\\slash","NULL"}"#)
        let withNull: [String?] = ["a", nil]
        #expect(withNull.queryText == #"{"a",NULL}"#)
        // Multibyte characters pass as they are; only the quote and the backslash are escaped.
        let wide = ["ñandú", "😀\"e\u{301}", "\u{FFFF}\\"]
        #expect(wide.queryText == "{\"ñandú\",\"😀\\\"e\u{301}\",\"\u{FFFF}\\\\\"}")
    }
}
