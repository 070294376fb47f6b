/// Splits a console line into arguments the way a POSIX shell would for simple words: whitespace separates,
/// single quotes are literal, double quotes allow `\"` and `\\`, a backslash escapes the next character, and a
/// line whose first word starts with `#` is a comment. Elsewhere `#` is text (`chat send … I love #sunsets`):
/// nothing the operator typed is ever dropped.
enum Tokenizer {
    /// A line the tokenizer cannot split.
    struct Failure: Error, CustomStringConvertible, Equatable {
        var description: String
    }

    /// The line's arguments; empty for a blank line or a comment.
    static func split(_ line: String) throws(Failure) -> [String] {
        var words: [String] = []
        var current = ""
        var inWord = false
        var scalars = line.unicodeScalars.makeIterator()
        while let scalar = scalars.next() {
            switch scalar {
            case " ", "\t", "\n", "\r":
                if inWord { words.append(current) }
                current = ""
                inWord = false
            case "#" where !inWord && words.isEmpty:
                return words
            case "'":
                inWord = true
                var closed = false
                while let next = scalars.next() {
                    if next == "'" { closed = true; break }
                    current.unicodeScalars.append(next)
                }
                guard closed else { throw Failure(description: "unterminated single quote") }
            case "\"":
                inWord = true
                var closed = false
                while let next = scalars.next() {
                    if next == "\"" { closed = true; break }
                    if next == "\\" {
                        guard let escaped = scalars.next() else { break }
                        if escaped != "\"" && escaped != "\\" { current.unicodeScalars.append("\\") }
                        current.unicodeScalars.append(escaped)
                    } else {
                        current.unicodeScalars.append(next)
                    }
                }
                guard closed else { throw Failure(description: "unterminated double quote") }
            case "\\":
                inWord = true
                guard let escaped = scalars.next() else { throw Failure(description: "backslash at end of line") }
                current.unicodeScalars.append(escaped)
            default:
                inWord = true
                current.unicodeScalars.append(scalar)
            }
        }
        if inWord { words.append(current) }
        return words
    }
}
