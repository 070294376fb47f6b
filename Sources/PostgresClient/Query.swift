import Foundation
/// A SQL statement with its values kept apart, as bind parameters.
///
/// Every interpolated value becomes a `$n` parameter; it never becomes part of the SQL text. Identifiers
/// take a separate, visible path, and raw SQL must be asked for by name:
///
/// ```swift
/// let query: Query = "SELECT username FROM \(identifier: table) WHERE uid = \(uid)"
/// query.sql    // SELECT username FROM "users" WHERE uid = $1
/// ```
///
/// A query is also a fragment of a larger one: interpolated into another (its placeholders renumbered after
/// the ones before it), added with `+`, or joined:
///
/// ```swift
/// let conditions: [Query] = ["uid = \(uid)", "post_key = \(key)"]
/// let query: Query = "DELETE FROM timeline WHERE \(conditions.joined(separator: " AND "))"
/// query.sql    // DELETE FROM timeline WHERE uid = $1 AND post_key = $2
/// ```
public struct Query: Sendable, Hashable, ExpressibleByStringInterpolation, CustomStringConvertible {
    /// The statement text, with `$1`, `$2`, … where the values go.
    public private(set) var sql: String
    /// The parameters' values in text format, `nil` for SQL NULL.
    public private(set) var binds: [String?]
    /// Where in `sql` (UTF-8 offsets) each placeholder starts, in order: what composition renumbers. Only
    /// placeholders this type wrote are listed, so `$1` inside a literal of trusted SQL is never touched.
    private var placeholders: [Int]

    /// A statement with no parameters.
    public init(stringLiteral value: String) {
        sql = value
        binds = []
        placeholders = []
    }

    /// Builds a statement from interpolation; see `StringInterpolation`.
    public init(stringInterpolation: StringInterpolation) {
        sql = stringInterpolation.sql
        binds = stringInterpolation.binds
        placeholders = stringInterpolation.placeholders
    }

    /// A statement from SQL text built elsewhere (a migration file). Never pass user data here.
    public init(unsafeSQL sql: String) {
        self.sql = sql
        binds = []
        placeholders = []
    }

    /// `query` with trusted SQL text before it (`DECLARE … CURSOR FOR`); its parameters keep their numbers.
    public init(prefixing prefix: String, to query: Query) {
        self = Query(unsafeSQL: prefix) + query
    }

    /// Both fragments, one after the other, the second's placeholders numbered after the first's.
    public static func + (first: Query, second: Query) -> Query {
        var interpolation = StringInterpolation(literalCapacity: 0, interpolationCount: 0)
        interpolation.appendInterpolation(first)
        interpolation.appendInterpolation(second)
        return Query(stringInterpolation: interpolation)
    }

    /// Appends a fragment.
    public static func += (query: inout Query, fragment: Query) {
        query = query + fragment
    }

    /// The statement text only: values are never shown.
    public var description: String { sql }

    /// Quotes an identifier as PostgreSQL requires: in double quotes, with inner quotes doubled.
    public static func quoted(identifier: String) -> String {
        "\"" + identifier.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    /// The interpolation that turns values into parameters.
    public struct StringInterpolation: StringInterpolationProtocol {
        var sql = ""
        var binds: [String?] = []
        var placeholders: [Int] = []

        /// Reserves room for the literal text.
        public init(literalCapacity: Int, interpolationCount: Int) {
            sql.reserveCapacity(literalCapacity + interpolationCount * 3)
            binds.reserveCapacity(interpolationCount)
        }

        /// SQL text written in the literal itself.
        public mutating func appendLiteral(_ literal: String) {
            sql += literal
        }

        /// A value, sent as the next `$n` parameter.
        public mutating func appendInterpolation(_ value: some QueryBindable) {
            appendParameter(value.queryText)
        }

        /// An optional value, sent as the next `$n` parameter (SQL NULL for nil).
        public mutating func appendInterpolation<Value: QueryBindable>(_ value: Value?) {
            appendParameter(value.queryText)
        }

        private mutating func appendParameter(_ text: String?) {
            binds.append(text)
            placeholders.append(sql.utf8.count)
            sql += "$\(binds.count)"
        }

        /// A fragment: its SQL, with its values as parameters numbered after the ones before it.
        public mutating func appendInterpolation(_ fragment: Query) {
            guard !fragment.placeholders.isEmpty else {
                sql += fragment.sql
                return
            }
            let text = Array(fragment.sql.utf8)
            var copied = 0
            for (index, start) in fragment.placeholders.enumerated() {
                // The placeholder is `$` and the digits of its number, index + 1.
                sql += String(decoding: text[copied..<start], as: UTF8.self)
                appendParameter(fragment.binds[index])
                copied = start + 1 + String(index + 1).utf8.count
            }
            sql += String(decoding: text[copied...], as: UTF8.self)
        }

        /// Fragments, with `separator` (trusted SQL text) between them (`[Query].joined(separator:)`).
        fileprivate mutating func append(_ fragments: [Query], separator: String) {
            for (index, fragment) in fragments.enumerated() {
                if index > 0 { sql += separator }
                appendInterpolation(fragment)
            }
        }

        /// An identifier (table, column, role), quoted.
        public mutating func appendInterpolation(identifier: String) {
            sql += Query.quoted(identifier: identifier)
        }

        /// Raw SQL text built by the caller from trusted pieces (never from user data).
        public mutating func appendInterpolation(unsafeSQL text: String) {
            sql += text
        }
    }
}

extension Array where Element == Query {
    /// The fragments with `separator` (trusted SQL text, such as `" AND "`) between them; `Query("")` when empty.
    public func joined(separator: String) -> Query {
        var interpolation = Query.StringInterpolation(literalCapacity: 0, interpolationCount: count)
        interpolation.append(self, separator: separator)
        return Query(stringInterpolation: interpolation)
    }
}

/// A Swift value that can travel as a text-format bind parameter.
public protocol QueryBindable: Sendable {
    /// The value in PostgreSQL's text input format, or `nil` for SQL NULL.
    var queryText: String? { get }
}

extension String: QueryBindable {
    /// The string itself.
    public var queryText: String? { self }
}

extension Substring: QueryBindable {
    /// The substring's characters.
    public var queryText: String? { String(self) }
}

extension Int: QueryBindable {
    /// Decimal digits.
    public var queryText: String? { String(self) }
}

extension Int64: QueryBindable {
    /// Decimal digits.
    public var queryText: String? { String(self) }
}

extension Int32: QueryBindable {
    /// Decimal digits.
    public var queryText: String? { String(self) }
}

extension Double: QueryBindable {
    /// The shortest text that reads back as the same double; PostgreSQL's spellings for the non-finite.
    public var queryText: String? { postgresText }

    /// The shortest text that float8in reads back as exactly this double.
    var postgresText: String {
        if isNaN { return "NaN" }
        if isInfinite { return self < 0 ? "-Infinity" : "Infinity" }
        return description
    }
}

extension Bool: QueryBindable {
    /// `t` or `f`.
    public var queryText: String? { self ? "t" : "f" }
}

extension Optional: QueryBindable where Wrapped: QueryBindable {
    /// The wrapped value's text, or SQL NULL.
    public var queryText: String? {
        switch self {
        case .some(let value): value.queryText
        case .none: nil
        }
    }
}

extension Array: QueryBindable where Element: QueryBindable {
    /// A PostgreSQL array literal (`{"a","b",NULL}`) with every element quoted and escaped.
    public var queryText: String? {
        var text = "{"
        for (index, element) in enumerated() {
            if index > 0 { text += "," }
            guard let value = element.queryText else {
                text += "NULL"
                continue
            }
            text += "\""
            for character in value.unicodeScalars {
                if character == "\"" || character == "\\" { text += "\\" }
                text.unicodeScalars.append(character)
            }
            text += "\""
        }
        return text + "}"
    }
}

/// A JSON document sent as a `jsonb` (or `json`) parameter: the text is passed as is.
public struct JSONText: QueryBindable, Hashable {
    /// The JSON document.
    public var text: String
    /// Wraps JSON text that the caller has already serialized.
    public init(_ text: String) { self.text = text }
    /// The JSON text.
    public var queryText: String? { text }
}
