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
    /// The parameters' types, declared to the server with the values, so `$1 IS NULL` needs no cast.
    public private(set) var types: [PostgresType]
    /// Where in `sql` (UTF-8 offsets) each placeholder starts, in order: what composition renumbers. Only
    /// placeholders this type wrote are listed, so `$1` inside a literal of trusted SQL is never touched.
    private var placeholders: [Int]

    /// A statement with no parameters.
    public init(stringLiteral value: String) {
        sql = value
        binds = []
        types = []
        placeholders = []
    }

    /// Builds a statement from interpolation; see `StringInterpolation`.
    public init(stringInterpolation: StringInterpolation) {
        sql = stringInterpolation.sql
        binds = stringInterpolation.binds
        types = stringInterpolation.types
        placeholders = stringInterpolation.placeholders
    }

    /// A statement from SQL text built inside this module from typed pieces (see `fetch(forward:from:)`).
    init(unsafeSQL sql: String) {
        self.sql = sql
        binds = []
        types = []
        placeholders = []
    }

    /// `FETCH FORWARD count FROM cursor`: a utility statement, which takes no parameters, so the count is
    /// written into the text (it is an integer, by its type) and the cursor name is quoted.
    public static func fetch(forward count: Int, from cursor: String) -> Query {
        Query(unsafeSQL: "FETCH FORWARD \(count) FROM \(quoted(identifier: cursor))")
    }

    /// `SET TRANSACTION SNAPSHOT 'id'`: a utility statement, which takes no parameters, so the id of a snapshot
    /// the server exported (`pg_export_snapshot()`, hexadecimal numbers and dashes) is written into the text; nil
    /// for an id of any other shape.
    public static func setTransactionSnapshot(_ id: String) -> Query? {
        let allowed = Set("0123456789ABCDEFabcdef-")
        guard !id.isEmpty, id.count <= 64, id.allSatisfy(allowed.contains) else { return nil }
        return Query(unsafeSQL: "SET TRANSACTION SNAPSHOT '\(id)'")
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

    /// A list of identifiers (`"a", "b"`), each quoted, for a column list or a table list.
    public static func identifiers(_ names: some Sequence<String>) -> Query {
        names.map { "\(identifier: $0)" as Query }.joined(separator: ", ")
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
        var types: [PostgresType] = []
        var placeholders: [Int] = []

        /// Reserves room for the literal text.
        public init(literalCapacity: Int, interpolationCount: Int) {
            sql.reserveCapacity(literalCapacity + interpolationCount * 3)
            binds.reserveCapacity(interpolationCount)
            types.reserveCapacity(interpolationCount)
        }

        /// SQL text written in the literal itself.
        public mutating func appendLiteral(_ literal: String) {
            sql += literal
        }

        /// A value, sent as the next `$n` parameter.
        public mutating func appendInterpolation<Value: QueryBindable>(_ value: Value) {
            appendParameter(value.queryText, type: Value.postgresType)
        }

        /// An optional value, sent as the next `$n` parameter (SQL NULL for nil) of the wrapped type.
        public mutating func appendInterpolation<Value: QueryBindable>(_ value: Value?) {
            appendParameter(value.queryText, type: Value.postgresType)
        }

        private mutating func appendParameter(_ text: String?, type: PostgresType) {
            binds.append(text)
            types.append(type)
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
                appendParameter(fragment.binds[index], type: fragment.types[index])
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

/// A PostgreSQL data type that parameters are declared with (its `pg_type` object identifier).
public enum PostgresType: UInt32, Sendable, Hashable {
    case boolean = 16
    case bigint = 20
    case integer = 23
    case text = 25
    case doublePrecision = 701
    case jsonb = 3802
    case booleanArray = 1000
    case integerArray = 1007
    case textArray = 1009
    case bigintArray = 1016
    case doublePrecisionArray = 1022
    case jsonbArray = 3807

    /// The array type whose elements are of this type; an array type is its own (PostgreSQL arrays of arrays
    /// are arrays of more dimensions).
    public var array: PostgresType {
        switch self {
        case .boolean, .booleanArray: .booleanArray
        case .bigint, .bigintArray: .bigintArray
        case .integer, .integerArray: .integerArray
        case .text, .textArray: .textArray
        case .doublePrecision, .doublePrecisionArray: .doublePrecisionArray
        case .jsonb, .jsonbArray: .jsonbArray
        }
    }
}

/// A Swift value that can travel as a text-format bind parameter of a declared type.
public protocol QueryBindable: Sendable {
    /// The PostgreSQL type the parameter is declared with: the server resolves operators and functions
    /// against it, as it would against a column of that type.
    static var postgresType: PostgresType { get }
    /// The value in PostgreSQL's text input format, or `nil` for SQL NULL.
    var queryText: String? { get }
}

extension String: QueryBindable {
    /// `text`.
    public static var postgresType: PostgresType { .text }
    /// The string itself.
    public var queryText: String? { self }
}

extension Substring: QueryBindable {
    /// `text`.
    public static var postgresType: PostgresType { .text }
    /// The substring's characters.
    public var queryText: String? { String(self) }
}

extension Int: QueryBindable {
    /// `bigint`.
    public static var postgresType: PostgresType { .bigint }
    /// Decimal digits.
    public var queryText: String? { String(self) }
}

extension Int64: QueryBindable {
    /// `bigint`.
    public static var postgresType: PostgresType { .bigint }
    /// Decimal digits.
    public var queryText: String? { String(self) }
}

extension Int32: QueryBindable {
    /// `integer`.
    public static var postgresType: PostgresType { .integer }
    /// Decimal digits.
    public var queryText: String? { String(self) }
}

extension Double: QueryBindable {
    /// `double precision`.
    public static var postgresType: PostgresType { .doublePrecision }
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
    /// `boolean`.
    public static var postgresType: PostgresType { .boolean }
    /// `t` or `f`.
    public var queryText: String? { self ? "t" : "f" }
}

extension Optional: QueryBindable where Wrapped: QueryBindable {
    /// The wrapped value's type.
    public static var postgresType: PostgresType { Wrapped.postgresType }
    /// The wrapped value's text, or SQL NULL.
    public var queryText: String? {
        switch self {
        case .some(let value): value.queryText
        case .none: nil
        }
    }
}

extension Array: QueryBindable where Element: QueryBindable {
    /// The array type of the element's type.
    public static var postgresType: PostgresType { Element.postgresType.array }
    /// A PostgreSQL array literal (`{"a","b",NULL}`) with every element quoted and escaped. Built as UTF-8
    /// bytes: a quote or a backslash is one byte that no multibyte character holds (scalar by scalar, the
    /// migrations' checksums, which every process asks for, took a quarter of a point read's instructions).
    public var queryText: String? {
        var bytes: [UInt8] = [UInt8(ascii: "{")]
        for (index, element) in enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            guard let value = element.queryText else {
                bytes.append(contentsOf: "NULL".utf8)
                continue
            }
            bytes.append(UInt8(ascii: "\""))
            for byte in value.utf8 {
                if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { bytes.append(UInt8(ascii: "\\")) }
                bytes.append(byte)
            }
            bytes.append(UInt8(ascii: "\""))
        }
        bytes.append(UInt8(ascii: "}"))
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// A JSON document sent as a `jsonb` parameter: the text is passed as is.
public struct JSONText: QueryBindable, Hashable {
    /// `jsonb`.
    public static var postgresType: PostgresType { .jsonb }
    /// The JSON document.
    public var text: String
    /// Wraps JSON text that the caller has already serialized.
    public init(_ text: String) { self.text = text }
    /// The JSON text.
    public var queryText: String? { text }
}
