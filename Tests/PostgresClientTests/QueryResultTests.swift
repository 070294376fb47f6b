import Testing

@testable import PostgresClient

@Suite("Query results (no server)")
struct QueryResultTests {
    @Test func arrayLiteralParsing() {
        #expect(ArrayLiteral.parse("{}") == [])
        #expect(ArrayLiteral.parse("{a,b}") == ["a", "b"])
        #expect(ArrayLiteral.parse(#"{"a b","c,d",NULL,"NULL","x\"y"}"#) == ["a b", "c,d", nil, "NULL", "x\"y"])
        #expect(ArrayLiteral.parse("not an array") == nil)
        #expect(ArrayLiteral.parse(#"{"unterminated}"#) == nil)
    }
}
