import CLibPQ
import Foundation

extension Connection {
    /// Streams rows into `COPY … FROM STDIN` (text format) and returns how many the server stored.
    ///
    /// ```swift
    /// try connection.copyIn("COPY users (uid, username) FROM STDIN") { writer in
    ///     try writer.append("uid_1"); try writer.append("alice"); try writer.endRow()
    /// }
    /// ```
    /// If `body` throws, the COPY is aborted (nothing of it is stored) and the error is rethrown.
    @discardableResult
    public func copyIn(_ statement: Query, _ body: (CopyInWriter) throws -> Void) throws -> Int {
        try start(statement, expecting: PGRES_COPY_IN)
        let writer = CopyInWriter(connection: self, statement: statement.sql)
        do {
            try body(writer)
            try writer.flush()
        } catch {
            // libpq: "If errormsg is not NULL, the COPY is forced to fail, with the string … as the error message."
            _ = PQputCopyEnd(handle, "COPY aborted by the client")
            drainResults()
            throw error
        }
        guard PQputCopyEnd(handle, nil) == 1 else {
            throw connectionError(statement: statement.sql)
        }
        return try finishCopy(statement: statement.sql)
    }

    /// Streams the rows of `COPY … TO STDOUT` to `body`, one row (with its newline) per call, and returns the
    /// number of rows. If `body` throws, the server is asked to stop and the error is rethrown.
    @discardableResult
    public func copyOut(_ statement: Query, _ body: (UnsafeRawBufferPointer) throws -> Void) throws -> Int {
        try start(statement, expecting: PGRES_COPY_OUT)
        var failure: Error?
        while true {
            var data: UnsafeMutablePointer<CChar>?
            let length = PQgetCopyData(handle, &data, 0)
            if length == -1 { break }
            guard length >= 0, let data else {
                throw connectionError(statement: statement.sql)
            }
            // libpq: "The data returned … must be freed using PQfreemem."
            defer { PQfreemem(data) }
            guard failure == nil else { continue }
            do {
                try body(UnsafeRawBufferPointer(start: data, count: Int(length)))
            } catch {
                failure = error
                makeCancelHandle()?.cancel()
            }
        }
        if let failure {
            drainResults()
            throw failure
        }
        return try finishCopy(statement: statement.sql)
    }

    /// Starts `COPY … FROM STDIN` without a closure, for callers that interleave several COPY streams and other
    /// statements on one connection. Send data with `sendCopyData`, then call `endCopyIn` or `abortCopyIn`.
    public func beginCopyIn(_ statement: Query) throws {
        try start(statement, expecting: PGRES_COPY_IN)
    }

    /// Sends COPY data begun with `beginCopyIn` as one CopyData message; keep messages near 64 KB (the server
    /// parses a message only once it has all of it).
    public func sendCopyData(_ bytes: ArraySlice<UInt8>) throws {
        try putCopyData(bytes, statement: "COPY … FROM STDIN")
    }

    /// Ends the COPY begun with `beginCopyIn`; returns the rows the server stored.
    @discardableResult
    public func endCopyIn() throws -> Int {
        guard PQputCopyEnd(handle, nil) == 1 else {
            throw connectionError(statement: "COPY … FROM STDIN")
        }
        return try finishCopy(statement: "COPY … FROM STDIN")
    }

    /// Makes the COPY begun with `beginCopyIn` fail, storing nothing of it.
    public func abortCopyIn() {
        _ = PQputCopyEnd(handle, "COPY aborted by the client")
        drainResults()
    }

    /// Sends the COPY statement and checks that the server entered the expected copy mode.
    private func start(_ statement: Query, expecting mode: ExecStatusType) throws {
        _ = try check(send(statement), statement: statement.sql, expecting: [mode])
    }

    private func finishCopy(statement: String) throws -> Int {
        let result = try check(PQgetResult(handle), statement: statement, expecting: [PGRES_COMMAND_OK])
        drainResults()
        return result.affectedRows
    }

    /// Reads results until libpq has none left, so the connection is ready for the next command. A COPY still
    /// under way is ended first: one into the server fails, one out of it is read to its end.
    package func drainResults() {
        while let result = PQgetResult(handle) {
            let status = PQresultStatus(result)
            PQclear(result)
            if status == PGRES_COPY_IN {
                guard PQputCopyEnd(handle, "COPY aborted by the client") == 1 else { return }
            } else if status == PGRES_COPY_OUT {
                var data: UnsafeMutablePointer<CChar>?
                while case let length = PQgetCopyData(handle, &data, 0), length >= 0 {
                    if let data { PQfreemem(data) }
                }
            } else if status == PGRES_COPY_BOTH {
                return
            }
        }
    }

    func putCopyData(_ bytes: ArraySlice<UInt8>, statement: String) throws {
        let status = bytes.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { PQputCopyData(handle, $0.baseAddress, Int32($0.count)) }
        }
        guard status == 1 else { throw connectionError(statement: statement) }
    }
}

/// Encodes rows in COPY's text format into a byte buffer.
///
/// Append each field of a row in column order, then call `endRow()`.
public struct CopyRowEncoder {
    /// The encoded rows not yet sent.
    public private(set) var bytes: [UInt8] = []
    private var fieldsInRow = 0
    /// Rows ended so far.
    public private(set) var rowCount = 0

    /// An empty encoder.
    public init(capacity: Int = 1 << 16) {
        bytes.reserveCapacity(capacity)
    }

    private mutating func beginField() {
        if fieldsInRow > 0 { bytes.append(UInt8(ascii: "\t")) }
        fieldsInRow += 1
    }

    private mutating func appendNull() {
        bytes.append(UInt8(ascii: "\\"))
        bytes.append(UInt8(ascii: "N"))
    }

    /// A text (or json, jsonb) field; `nil` is NULL. Throws for a NUL character, which text cannot hold.
    public mutating func append(_ value: String?) throws {
        beginField()
        guard let value else { return appendNull() }
        // The borrowed string's own bytes: `withUTF8` on a copy retained and released it.
        if try value.utf8.withContiguousStorageIfAvailable({ try appendEscaped($0) }) != nil { return }
        var copy = value
        try copy.withUTF8 { try appendEscaped($0) }
    }

    /// A text field from UTF-8 bytes. Throws for a NUL character, which text cannot hold.
    public mutating func append(utf8 value: UnsafeBufferPointer<UInt8>) throws {
        beginField()
        try appendEscaped(value)
    }

    private mutating func appendEscaped(_ text: UnsafeBufferPointer<UInt8>) throws {
        guard let base = text.baseAddress else { return }
        var runStart = 0
        var index = 0
        let count = text.count
        // A byte's high bit ends up set when it is below 0x0E (NUL, tab, newline, return) or a backslash (bytes of
        // 0x80 and up, UTF-8, are taken out); the lowest one set is exact (a borrow only flags bytes above a flagged
        // one).
        func flags(at offset: Int) -> UInt64 {
            let word = UnsafeRawPointer(base + offset).loadUnaligned(as: UInt64.self)
            let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
            return ((word &- ones &* 0x0E) | ((word ^ (ones &* 0x5C)) &- ones)) & ~word & highs
        }
        while index < count {
            // Eight bytes at a time, then straight to the first that may need an escape.
            if index + 8 <= count {
                let found = flags(at: index)
                if found == 0 {
                    index += 8
                    continue
                }
                index += UInt64(littleEndian: found).trailingZeroBitCount / 8
            } else if count >= 8, flags(at: count - 8) == 0 {
                // A tail shorter than a word: the last eight bytes, overlapping those read, clear it at once.
                index = count
                break
            }
            let byte = text[index]
            index += 1
            guard byte <= UInt8(ascii: "\\") else { continue }
            let escape: UInt8
            switch byte {
            case 0:
                throw DatabaseError(
                    .invalidValue, "a text value contains a NUL character (U+0000), which PostgreSQL text cannot hold",
                    sqlState: .characterNotInRepertoire, context: "COPY row \(rowCount + 1)")
            case UInt8(ascii: "\\"): escape = UInt8(ascii: "\\")
            case UInt8(ascii: "\n"): escape = UInt8(ascii: "n")
            case UInt8(ascii: "\r"): escape = UInt8(ascii: "r")
            case UInt8(ascii: "\t"): escape = UInt8(ascii: "t")
            default: continue
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: text[runStart..<index - 1]))
            bytes.append(UInt8(ascii: "\\"))
            bytes.append(escape)
            runStart = index
        }
        bytes.append(contentsOf: UnsafeBufferPointer(rebasing: text[runStart...]))
    }

    /// A double precision field, written so it reads back bit for bit; `nil` is NULL.
    public mutating func append(_ value: Double?) {
        beginField()
        guard let value else { return appendNull() }
        bytes.append(contentsOf: value.postgresText.utf8)
    }

    /// A double field given as the decimal text `value` was parsed from (JSON's number grammar, which float8's
    /// input reads the same, correctly rounded): the text goes as it is, sparing the shortest digits a double
    /// needs worked out again. `value` must be finite and not zero (whose text may be `-0`, or below the smallest
    /// double, which the server refuses).
    public mutating func append(numberText text: UnsafeBufferPointer<UInt8>, of value: Double) {
        assert(value.isFinite && value != 0 && !text.isEmpty, "a finite number other than zero")
        assert(
            text.allSatisfy {
                (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || Array("+-.eE".utf8).contains($0)
            },
            "JSON's number grammar")
        beginField()
        bytes.append(contentsOf: text)
    }

    /// An integer field; `nil` is NULL.
    public mutating func append(_ value: Int64?) {
        beginField()
        guard let value else { return appendNull() }
        bytes.append(contentsOf: String(value).utf8)
    }

    /// An integer field; `nil` is NULL.
    public mutating func append(_ value: Int?) {
        append(value.map(Int64.init))
    }

    /// A boolean field; `nil` is NULL.
    public mutating func append(_ value: Bool?) {
        beginField()
        guard let value else { return appendNull() }
        bytes.append(UInt8(ascii: value ? "t" : "f"))
    }

    /// A `text[]` field; `nil` is NULL.
    public mutating func append(_ value: [String]?) throws {
        try append(value?.queryText)
    }

    /// Ends the current row.
    public mutating func endRow() {
        bytes.append(UInt8(ascii: "\n"))
        fieldsInRow = 0
        rowCount += 1
    }

    /// Forgets the encoded bytes (after sending them), keeping the buffer's capacity.
    public mutating func removeAllBytes() {
        bytes.removeAll(keepingCapacity: true)
    }

    /// Drops the rows encoded after the first `byteCount` bytes, `rows` of them (all ended).
    package mutating func truncate(toByteCount byteCount: Int, droppingRows rows: Int) {
        precondition(fieldsInRow == 0 && byteCount <= bytes.count)
        bytes.removeSubrange(byteCount...)
        rowCount -= rows
    }
}

/// Encodes rows in COPY's text format and sends them in large chunks.
///
/// Append each field of a row in column order, then call `endRow()`.
public final class CopyInWriter {
    private let connection: Connection
    private let statement: String
    private var encoder = CopyRowEncoder(capacity: flushThreshold + 4096)
    /// Rows ended so far.
    public var rowCount: Int { encoder.rowCount }
    /// Bytes handed to libpq so far.
    public private(set) var bytesSent = 0

    /// See `TableLoader.messageSize`: larger CopyData messages stall the server.
    private static let flushThreshold = 1 << 16

    init(connection: Connection, statement: String) {
        self.connection = connection
        self.statement = statement
    }

    private func annotated<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch var error as DatabaseError {
            error.statement = statement
            throw error
        }
    }

    /// A text (or json, jsonb) field; `nil` is NULL. Throws for a NUL character, which text cannot hold.
    public func append(_ value: String?) throws {
        try annotated { try encoder.append(value) }
    }

    /// A double precision field, written so it reads back bit for bit; `nil` is NULL.
    public func append(_ value: Double?) { encoder.append(value) }

    /// An integer field; `nil` is NULL.
    public func append(_ value: Int64?) { encoder.append(value) }

    /// An integer field; `nil` is NULL.
    public func append(_ value: Int?) { encoder.append(value) }

    /// A boolean field; `nil` is NULL.
    public func append(_ value: Bool?) { encoder.append(value) }

    /// A `text[]` field; `nil` is NULL.
    public func append(_ value: [String]?) throws {
        try annotated { try encoder.append(value) }
    }

    /// Ends the current row, sending the buffer when it is large.
    public func endRow() throws {
        encoder.endRow()
        if encoder.bytes.count >= Self.flushThreshold { try flush() }
    }

    /// Sends whatever is buffered.
    func flush() throws {
        guard !encoder.bytes.isEmpty else { return }
        try connection.putCopyData(encoder.bytes[...], statement: statement)
        bytesSent += encoder.bytes.count
        encoder.removeAllBytes()
    }
}
