import Foundation
internal import PostgresClient

/// A row's columns as text, read in place: a libpq result row or a `COPY … TO STDOUT` line. What the export needs
/// to write a row without building it as a tree.
protocol ExportRow {
    /// Lends the raw UTF-8 text of `column` (nil for SQL NULL); valid only in `body`.
    func withText<R>(_ column: Int, _ body: (UnsafeBufferPointer<UInt8>?) throws -> R) rethrows -> R
    subscript(column: Int) -> String? { get }
    /// Whether `column` is SQL NULL.
    func isNull(_ column: Int) -> Bool
    /// Whether `column` holds exactly `text`, compared as bytes without making a string.
    func hasText(_ column: Int, equalTo text: String) -> Bool
}

/// A row of a query result reads as an export row.
extension StoreRow: ExportRow {}

extension ExportRow {
    /// The text of a column the schema declares NOT NULL (a key); NULL there is a decoding error.
    func text(_ column: Int) throws -> String {
        guard let text = self[column] else {
            throw StorageError(.decoding, "column \(column) of an exported row is NULL, which the schema forbids")
        }
        return text
    }

    subscript(column: Int) -> String? {
        withText(column) { $0.map { String(decoding: $0, as: UTF8.self) } }
    }

    func isNull(_ column: Int) -> Bool {
        withText(column) { $0 == nil }
    }

    func hasText(_ column: Int, equalTo text: String) -> Bool {
        withText(column) { bytes in
            guard let bytes else { return false }
            return FirebaseKey.same(text, bytes)
        }
    }

    /// The elements of a one-dimensional text array column; nil for SQL NULL.
    func textArray(_ column: Int) throws -> [String]? {
        try withText(column) { bytes in
            guard let bytes else { return nil }
            guard let elements = ArrayLiteral.parse(utf8: bytes) else {
                throw StorageError(.decoding, "not a text array: \"\(String(decoding: bytes, as: UTF8.self))\"")
            }
            return elements.compactMap { $0 }
        }
    }
}

/// One line of `COPY … TO STDOUT` in text format, read in place: its columns are ranges of the line itself, or,
/// when some column holds an escape, of a buffer the escapes were undone into (reused line after line).
struct CopyRow: ExportRow {
    private var line: UnsafePointer<UInt8>?
    private var unescaped: [UInt8] = []
    private var isUnescaped = false
    /// Each column's range in the line (or `unescaped`); nil for `\N`.
    private var columns: [Range<Int>?] = []

    /// Splits `line` (with its newline) at tabs; valid until the next call, and only while `line` is.
    mutating func read(_ line: UnsafeRawBufferPointer) {
        let bytes = line.bindMemory(to: UInt8.self)
        self.line = UnsafePointer(bytes.baseAddress)
        columns.removeAll(keepingCapacity: true)
        isUnescaped = false
        let end = bytes.last == UInt8(ascii: "\n") ? bytes.count - 1 : bytes.count
        guard let base = bytes.baseAddress, end > 0 else { return columns.append(0..<0) }
        // Most lines have no escape but `\N` for NULL: find the tabs with memchr and keep the columns in place.
        let hasEscape = memchr(base, Int32(UInt8(ascii: "\\")), end) != nil
        var start = 0
        while true {
            let tab = memchr(base + start, Int32(UInt8(ascii: "\t")), end - start)
            let stop = tab.map { UnsafePointer($0.assumingMemoryBound(to: UInt8.self)) - base } ?? end
            if hasEscape, memchr(base + start, Int32(UInt8(ascii: "\\")), stop - start) != nil {
                guard stop - start == 2, base[start + 1] == UInt8(ascii: "N") else { return unescape(bytes[..<end]) }
                columns.append(nil)
            } else {
                columns.append(start..<stop)
            }
            guard tab != nil else { return }
            start = stop + 1
        }
    }

    /// Reads the line again, undoing PostgreSQL's text-format escapes into `unescaped`.
    private mutating func unescape(_ line: Slice<UnsafeBufferPointer<UInt8>>) {
        unescaped.removeAll(keepingCapacity: true)
        columns.removeAll(keepingCapacity: true)
        isUnescaped = true
        var start = 0
        var isNull = false
        var index = line.startIndex
        func endColumn() {
            columns.append(isNull ? nil : start..<unescaped.count)
            start = unescaped.count
            isNull = false
        }
        while index < line.endIndex {
            let byte = line[index]
            index += 1
            if byte == UInt8(ascii: "\t") {
                endColumn()
            } else if byte == UInt8(ascii: "\\"), index < line.endIndex {
                let escaped = line[index]
                index += 1
                switch escaped {
                case UInt8(ascii: "N"): isNull = true
                case UInt8(ascii: "t"): unescaped.append(0x09)
                case UInt8(ascii: "n"): unescaped.append(0x0A)
                case UInt8(ascii: "r"): unescaped.append(0x0D)
                case UInt8(ascii: "b"): unescaped.append(0x08)
                case UInt8(ascii: "f"): unescaped.append(0x0C)
                case UInt8(ascii: "v"): unescaped.append(0x0B)
                default: unescaped.append(escaped)
                }
            } else {
                unescaped.append(byte)
            }
        }
        endColumn()
    }

    func withText<R>(_ column: Int, _ body: (UnsafeBufferPointer<UInt8>?) throws -> R) rethrows -> R {
        guard let range = columns[column] else { return try body(nil) }
        if isUnescaped {
            return try unescaped.withUnsafeBufferPointer { try body(UnsafeBufferPointer(rebasing: $0[range])) }
        }
        guard let line else { preconditionFailure("a row read in place keeps its line") }
        return try body(UnsafeBufferPointer(start: line + range.lowerBound, count: range.count))
    }
}

/// Tells the repeated rows of a like apart, so that export writes it once: a like has a row per owner of its post
/// key (migration 0015), and they come next to each other in every order export reads likes in (their keys are
/// equal). Remembers the last like seen in buffers it reuses.
struct RepeatedLikeFilter {
    private var like = KeyColumnBytes()

    /// Whether `row` (a `post_likes` row: post key, liker) is the like of the row before; remembers it if not.
    mutating func repeats(_ row: some ExportRow) -> Bool {
        like.matchOrKeep(row, columns: 2)
    }
}

/// A row's first key columns kept as bytes, in buffers reused row after row: whether the next row starts with
/// the same keys is a comparison of bytes, without a string or a reference count.
struct KeyColumnBytes {
    private var bytes = GrowingBytes()
    /// Where each kept column ends in `bytes`; empty until a row is kept.
    private var ends: [Int] = []
    private var isKept = false

    /// Whether `row`'s first `columns` columns hold the bytes kept; when not, keeps them.
    mutating func matchOrKeep(_ row: some ExportRow, columns: Int) -> Bool {
        if isKept, matches(row, columns: columns) { return true }
        bytes.removeAll()
        ends.removeAll(keepingCapacity: true)
        for column in 0..<columns {
            row.withText(column) { text in
                if let text { bytes.append(text) }
            }
            ends.append(bytes.count)
        }
        isKept = true
        return false
    }

    private func matches(_ row: some ExportRow, columns: Int) -> Bool {
        guard ends.count == columns else { return false }
        return bytes.withBytes { kept in
            var start = 0
            for column in 0..<columns {
                let end = ends[column]
                let same = row.withText(column) { text in
                    guard let text, text.count == end - start else { return false }
                    guard text.count > 0, let x = kept.baseAddress, let y = text.baseAddress else { return true }
                    return memcmp(x + start, y, text.count) == 0
                }
                guard same else { return false }
                start = end
            }
            return true
        }
    }
}
