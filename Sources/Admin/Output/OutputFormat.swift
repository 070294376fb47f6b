import ArgumentParser
import Foundation
import Storage

/// How a command prints its result.
enum OutputFormat: String, CaseIterable, ExpressibleByArgument, Sendable {
    /// Aligned columns with a header and a row count footer, like psql.
    case table
    /// One field per line, record by record, for wide rows (psql's `\x`).
    case expanded
    /// One JSON document.
    case json
    /// RFC 4180 comma-separated values with a header line.
    case csv
}

/// A value in a result, typed so that JSON and alignment can tell numbers from text.
enum Cell: Equatable {
    case text(String)
    case integer(Int)
    case number(Double)
    case boolean(Bool)
    /// Several texts (a chat's members): joined with commas in tables and CSV, an array in JSON.
    case list([String])
    case null

    /// The value as a table or CSV shows it.
    var display: String {
        switch self {
        case .text(let text): text
        case .integer(let value): String(value)
        case .number(let value): JSONWriter.number(value)
        case .boolean(let value): value ? "true" : "false"
        case .list(let values): values.joined(separator: ", ")
        case .null: ""
        }
    }

    /// The value as a table or expanded record shows it on a terminal: control characters escaped.
    var shown: String { TerminalText.escaped(display) }

    var isNumeric: Bool {
        switch self {
        case .integer, .number: true
        default: false
        }
    }

    var json: String {
        switch self {
        case .text(let text): JSONWriter.string(text)
        case .integer(let value): String(value)
        case .number(let value): JSONWriter.number(value)
        case .boolean(let value): value ? "true" : "false"
        case .list(let values): JSONWriter.array(values.map(JSONWriter.string))
        case .null: "null"
        }
    }
}

/// Rows with named columns, as commands return them.
struct ResultTable {
    /// The column names.
    var columns: [String]
    /// The rows, each with one cell per column.
    var rows: [[Cell]]
    /// A line printed above the table in table formats.
    var title: String?
}

/// The JSON spelling of strings and numbers, shared by every JSON the console writes: FirebaseTree's, so that a
/// report spells a value exactly as an export does.
enum JSONWriter {
    /// A JSON string literal, escaped as `JSON.stringify` escapes it.
    static func string(_ text: String) -> String {
        var writer = JSONTextWriter()
        writer.string(text)
        return String(decoding: writer.bytes, as: UTF8.self)
    }

    /// A number as JavaScript prints it (`Number::toString`).
    static func number(_ value: Double) -> String {
        JavaScriptNumber.format(value)
    }

    /// A duration or a time in seconds, to the microsecond: `0.003804`, never the noise a sum of measured
    /// durations carries (`0.0046386380000000005`).
    static func seconds(_ value: Double) -> String {
        number(value.isFinite ? (value * 1e6).rounded() / 1e6 : value)
    }

    /// An object from already-encoded member values, keys in the given order.
    static func object(_ members: [(String, String)]) -> String {
        "{" + members.map { string($0.0) + ": " + $0.1 }.joined(separator: ", ") + "}"
    }

    /// An array from already-encoded elements.
    static func array(_ elements: [String]) -> String {
        "[" + elements.joined(separator: ", ") + "]"
    }
}
