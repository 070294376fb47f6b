import Testing

@testable import Admin

@Suite("Tokenizer")
struct TokenizerTests {
    @Test func splitsOnWhitespace() throws {
        #expect(try Tokenizer.split("  status   --format json ") == ["status", "--format", "json"])
        #expect(try Tokenizer.split("") == [])
        #expect(try Tokenizer.split("   \t ") == [])
    }

    @Test func quotesAndEscapes() throws {
        #expect(try Tokenizer.split(#"user add u1 'it''s'"#) == ["user", "add", "u1", "its"])
        #expect(
            try Tokenizer.split(#"say "a \"quoted\" word" 'single $x \n'"#) == [
                "say", #"a "quoted" word"#, #"single $x \n"#,
            ])
        #expect(try Tokenizer.split(#"path\ with\ spaces"#) == ["path with spaces"])
        #expect(try Tokenizer.split(#""" ''"#) == ["", ""])
        #expect(try Tokenizer.split("emoji 😀 ñandú") == ["emoji", "😀", "ñandú"])
    }

    /// Only a line that starts with `#` is a comment: text after a command is kept, whatever it holds.
    @Test func commentsStartALine() throws {
        #expect(try Tokenizer.split("# a comment") == [])
        #expect(try Tokenizer.split("   #indented comment") == [])
        #expect(
            try Tokenizer.split("chat send --from a --to b I love #sunsets") == [
                "chat", "send", "--from", "a", "--to", "b", "I", "love", "#sunsets",
            ])
        #expect(try Tokenizer.split("status # not a comment") == ["status", "#", "not", "a", "comment"])
        #expect(try Tokenizer.split("get /a#b '#kept'") == ["get", "/a#b", "#kept"])
    }

    @Test func unterminatedQuotesAreErrors() {
        #expect(throws: Tokenizer.Failure.self) { try Tokenizer.split("say 'open") }
        #expect(throws: Tokenizer.Failure.self) { try Tokenizer.split(#"say "open"#) }
        #expect(throws: Tokenizer.Failure.self) { try Tokenizer.split("trailing \\") }
    }
}
