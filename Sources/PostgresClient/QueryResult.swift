import CLibPQ
import Foundation

/// The rows a statement returned, owned until the last reference goes.
///
/// libpq: "Every command result should be freed via PQclear when it is no longer needed", hence `deinit`.
public final class QueryResult: RandomAccessCollection {
    let pointer: OpaquePointer
    /// The statement that produced this result, for decoding errors.
    let statement: String

    init(pointer: OpaquePointer, statement: String) {
        self.pointer = pointer
        self.statement = statement
    }

    deinit { PQclear(pointer) }

    /// The index of the first row.
    public var startIndex: Int { 0 }
    /// One past the last row.
    public var endIndex: Int { Int(PQntuples(pointer)) }
    /// The row at `index`.
    public subscript(index: Int) -> Row { Row(result: self, index: Int32(index)) }

    /// The number of columns.
    public var columnCount: Int { Int(PQnfields(pointer)) }

    /// The columns' names, in order.
    public var columnNames: [String] {
        (0..<PQnfields(pointer)).map { String(cString: PQfname(pointer, $0)) }
    }

    /// Rows inserted, updated, deleted, copied or selected, as the command tag reports.
    public var affectedRows: Int {
        Int(String(cString: PQcmdTuples(pointer))) ?? 0
    }

    /// The bytes of all the result's values (what holding it costs, beyond libpq's per-row overhead).
    public var dataByteCount: Int {
        var total = 0
        for row in 0..<PQntuples(pointer) {
            for column in 0..<PQnfields(pointer) { total += Int(PQgetlength(pointer, row, column)) }
        }
        return total
    }

    /// The index of the column named `name`, if there is one.
    public func columnIndex(named name: String) -> Int? {
        let index = PQfnumber(pointer, name)
        return index < 0 ? nil : Int(index)
    }
}

/// One row of a `QueryResult`; it keeps the result alive.
public struct Row {
    let result: QueryResult
    let index: Int32

    /// The raw text of column `column`, `nil` for SQL NULL.
    public subscript(column: Int) -> String? {
        guard PQgetisnull(result.pointer, index, Int32(column)) == 0 else { return nil }
        return String(cString: PQgetvalue(result.pointer, index, Int32(column)))
    }

    /// Lends the raw UTF-8 text of column `column` (nil for SQL NULL) without copying it; valid only in `body`.
    package func withText<R>(_ column: Int, _ body: (UnsafeBufferPointer<UInt8>?) throws -> R) rethrows -> R {
        guard PQgetisnull(result.pointer, index, Int32(column)) == 0 else { return try body(nil) }
        let length = Int(PQgetlength(result.pointer, index, Int32(column)))
        return try PQgetvalue(result.pointer, index, Int32(column)).withMemoryRebound(to: UInt8.self, capacity: length)
        {
            try body(UnsafeBufferPointer(start: $0, count: length))
        }
    }

    /// Whether column `column` is SQL NULL.
    package func isNull(_ column: Int) -> Bool {
        PQgetisnull(result.pointer, index, Int32(column)) != 0
    }

    /// Decodes column `column` as `T`.
    public func decode<T: QueryDecodable>(_ type: T.Type = T.self, at column: Int) throws -> T {
        guard column >= 0, column < result.columnCount else {
            throw DatabaseError(
                .decoding, "column \(column) is out of range (the result has \(result.columnCount))",
                statement: result.statement)
        }
        do {
            return try T(queryText: self[column])
        } catch let error as DatabaseError {
            throw DatabaseError(
                .decoding, "column \"\(result.columnNames[column])\": \(error.message)", statement: result.statement)
        }
    }

    /// Decodes the column named `name` as `T`.
    public func decode<T: QueryDecodable>(_ type: T.Type = T.self, named name: String) throws -> T {
        guard let column = result.columnIndex(named: name) else {
            throw DatabaseError(.decoding, "the result has no column \"\(name)\"", statement: result.statement)
        }
        return try decode(type, at: column)
    }
}

/// A Swift type that a text-format result column decodes into.
public protocol QueryDecodable {
    /// Decodes a column's text, `nil` being SQL NULL; throws `DatabaseError` of kind `.decoding`.
    init(queryText: String?) throws
}

extension QueryDecodable {
    static func nonNull(_ text: String?) throws -> String {
        guard let text else { throw DatabaseError(.decoding, "unexpected NULL for \(Self.self)") }
        return text
    }

    static func unreadable(_ text: String) -> DatabaseError {
        DatabaseError(.decoding, "cannot read \(Self.self) from \"\(text.prefix(40))\"")
    }
}

extension String: QueryDecodable {
    /// The column's text.
    public init(queryText: String?) throws { self = try Self.nonNull(queryText) }
}

extension Int: QueryDecodable {
    /// A decimal integer.
    public init(queryText: String?) throws {
        let text = try Self.nonNull(queryText)
        guard let value = Int(text) else { throw Self.unreadable(text) }
        self = value
    }
}

extension Int64: QueryDecodable {
    /// A decimal integer.
    public init(queryText: String?) throws {
        let text = try Self.nonNull(queryText)
        guard let value = Int64(text) else { throw Self.unreadable(text) }
        self = value
    }
}

extension Double: QueryDecodable {
    /// float8 output; exact because PostgreSQL 12+ prints the shortest round-tripping digits.
    public init(queryText: String?) throws {
        let text = try Self.nonNull(queryText)
        switch text {
        case "NaN": self = .nan
        case "Infinity": self = .infinity
        case "-Infinity": self = -.infinity
        default:
            guard let value = Double(text) else { throw Self.unreadable(text) }
            self = value
        }
    }
}

extension Bool: QueryDecodable {
    /// `t` or `f`.
    public init(queryText: String?) throws {
        switch try Self.nonNull(queryText) {
        case "t": self = true
        case "f": self = false
        case let text: throw Self.unreadable(text)
        }
    }
}

extension Optional: QueryDecodable where Wrapped: QueryDecodable {
    /// `nil` for SQL NULL, the wrapped type's decoding otherwise.
    public init(queryText: String?) throws {
        self = try queryText.map { try Wrapped(queryText: $0) }
    }
}

extension Array: QueryDecodable where Element: QueryDecodable {
    /// A one-dimensional array in PostgreSQL's output format (`{a,"b c",NULL}`).
    public init(queryText: String?) throws {
        let text = try Self.nonNull(queryText)
        guard let elements = ArrayLiteral.parse(text) else { throw Self.unreadable(text) }
        self = try elements.map { try Element(queryText: $0) }
    }
}

/// PostgreSQL's array output format, one dimension.
package enum ArrayLiteral {
    /// The elements of `{…}`, `nil` standing for NULL; `nil` overall when the text is not such an array.
    package static func parse(_ text: String) -> [String?]? {
        var text = text
        return text.withUTF8 { parse(utf8: $0) }
    }

    /// `parse(_:)` of the literal's UTF-8 bytes. The syntax characters are ASCII, so bytes of other characters
    /// are copied as they come.
    package static func parse(utf8 text: UnsafeBufferPointer<UInt8>) -> [String?]? {
        guard text.count >= 2, text.first == UInt8(ascii: "{"), text.last == UInt8(ascii: "}") else { return nil }
        var elements: [String?] = []
        guard text.count > 2 else { return elements }
        var current: [UInt8] = []
        var isQuoted = false
        var wasQuoted = false
        var index = 1
        let end = text.count - 1
        func finish() {
            let isNull = !wasQuoted && current.elementsEqual("NULL".utf8)
            elements.append(isNull ? nil : String(decoding: current, as: UTF8.self))
            current.removeAll(keepingCapacity: true)
            wasQuoted = false
        }
        while index < end {
            let byte = text[index]
            index += 1
            switch byte {
            case UInt8(ascii: "\\"):
                guard index < end else { return nil }
                current.append(text[index])
                index += 1
            case UInt8(ascii: "\""):
                isQuoted.toggle()
                wasQuoted = true
            case UInt8(ascii: ",") where !isQuoted:
                finish()
            default:
                current.append(byte)
            }
        }
        guard !isQuoted else { return nil }
        finish()
        return elements
    }
}
