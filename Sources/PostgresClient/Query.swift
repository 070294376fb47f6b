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
public struct Query: Sendable, Hashable, ExpressibleByStringInterpolation, CustomStringConvertible {
    /// The statement text, with `$1`, `$2`, … where the values go.
    public private(set) var sql: String
    /// The parameters' values in text format, `nil` for SQL NULL.
    public private(set) var binds: [String?]

    /// A statement with no parameters.
    public init(stringLiteral value: String) {
        sql = value
        binds = []
    }

    /// Builds a statement from interpolation; see `StringInterpolation`.
    public init(stringInterpolation: StringInterpolation) {
        sql = stringInterpolation.sql
        binds = stringInterpolation.binds
    }

    /// A statement from SQL text built elsewhere (a migration file). Never pass user data here.
    public init(unsafeSQL sql: String) {
        self.sql = sql
        binds = []
    }

    /// `query` with trusted SQL text before it (`DECLARE … CURSOR FOR`); its parameters keep their numbers.
    public init(prefixing prefix: String, to query: Query) {
        sql = prefix + query.sql
        binds = query.binds
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
            binds.append(value.queryText)
            sql += "$\(binds.count)"
        }

        /// An optional value, sent as the next `$n` parameter (SQL NULL for nil).
        public mutating func appendInterpolation<Value: QueryBindable>(_ value: Value?) {
            binds.append(value.queryText)
            sql += "$\(binds.count)"
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
