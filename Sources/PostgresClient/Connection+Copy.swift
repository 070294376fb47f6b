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

    /// Starts `COPY … TO STDOUT` without a closure, for callers that read several COPY streams at once (a merge of
    /// a table's shards, one stream a server). Read its rows with `nextCopyOutRow` until it returns nil; nothing
    /// else can run on the connection meanwhile.
    public func beginCopyOut(_ statement: Query) throws {
        try start(statement, expecting: PGRES_COPY_OUT)
        copyOutStatement = statement.sql
    }

    /// The next row of the COPY begun with `beginCopyOut` (with its newline), valid until the next call on this
    /// connection; nil once the rows have ended and the COPY has succeeded. Blocks until the row arrives.
    public func nextCopyOutRow() throws -> UnsafeRawBufferPointer? {
        heldCopyOutRow.map { PQfreemem($0) }
        heldCopyOutRow = nil
        var data: UnsafeMutablePointer<CChar>?
        let length = PQgetCopyData(handle, &data, 0)
        if length == -1 {
            _ = try finishCopy(statement: copyOutStatement)
            return nil
        }
        guard length >= 0, let data else { throw connectionError(statement: copyOutStatement) }
        heldCopyOutRow = data
        return UnsafeRawBufferPointer(start: data, count: Int(length))
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

/// Encodes rows in one of COPY's formats into a byte buffer.
///
/// Append each field of a row in column order, then call `endRow()`. A binary COPY's data begins with
/// `CopyRowEncoder.binaryHeader` and may end with `binaryTrailer`; the rows are the same either way.
public struct CopyRowEncoder {
    /// COPY's data formats: text (`COPY … FROM STDIN`) and binary (`… WITH (FORMAT binary)`).
    public enum Format: Sendable {
        /// Tab-separated fields, backslash escapes, one row a line.
        case text
        /// Each field's length then its bytes in the column type's binary form: nothing for the server to
        /// unescape or to parse as a number (BENCHMARKS-LOG.md, "Binary COPY").
        case binary
    }

    /// The format the rows are encoded in.
    public let format: Format
    /// Grows and is reused, never shrinks: bytes are written through one pointer per field, where an array's
    /// appends cost a uniqueness check and a call each.
    private var storage: [UInt8] = []
    /// Bytes encoded and not yet sent: the first ones of `storage`.
    public private(set) var byteCount = 0
    private var fieldsInRow = 0
    /// Where the row being encoded starts (binary: its field count is written there when it ends).
    private var rowStart = 0
    /// Rows ended so far.
    public private(set) var rowCount = 0

    /// What binary COPY data begins with: the signature, no flags, no header extension.
    public static let binaryHeader: [UInt8] =
        Array("PGCOPY\n".utf8) + [0xFF, 0x0D, 0x0A, 0x00] + [UInt8](repeating: 0, count: 8)
    /// What binary COPY data ends with: a field count of -1.
    public static let binaryTrailer: [UInt8] = [0xFF, 0xFF]
    /// The type of a `text[]` field's elements (`text`), which a binary array names.
    private static let textOID: Int32 = 25

    /// An empty encoder, with room for `capacity` bytes before it grows.
    public init(capacity: Int = 1 << 16, format: Format = .text) {
        self.format = format
        storage.reserveCapacity(capacity)
    }

    /// The encoded rows not yet sent.
    public var bytes: ArraySlice<UInt8> { storage[..<byteCount] }

    /// Writes `count` bytes with `body`, which gets where they go.
    @inline(__always)
    private mutating func write(_ count: Int, _ body: (UnsafeMutablePointer<UInt8>) -> Void) {
        let end = byteCount + count
        if end > storage.count {
            // 64 KB at a time, whatever the capacity (which grows geometrically): untouched capacity costs no
            // memory, and a buffer is seldom larger than its high-water mark by more than that.
            storage.append(contentsOf: repeatElement(0, count: max(end - storage.count, 1 << 16)))
        }
        let start = byteCount
        storage.withUnsafeMutableBufferPointer { body($0.baseAddress.unsafelyUnwrapped + start) }
        byteCount = end
    }

    private mutating func writeBytes(_ source: UnsafeBufferPointer<UInt8>) {
        guard let base = source.baseAddress, !source.isEmpty else { return }
        write(source.count) { $0.update(from: base, count: source.count) }
    }

    private mutating func writeASCII(_ first: UInt8, _ second: UInt8) {
        write(2) {
            $0[0] = first
            $0[1] = second
        }
    }

    private static func store<Integer: FixedWidthInteger>(_ value: Integer, at target: UnsafeMutablePointer<UInt8>) {
        UnsafeMutableRawPointer(target).storeBytes(of: value.bigEndian, as: Integer.self)
    }

    private mutating func beginField() {
        if fieldsInRow == 0 {
            rowStart = byteCount
            // The field count, written when the row ends.
            if format == .binary { write(2) { _ in } }
        } else if format == .text {
            write(1) { $0.pointee = UInt8(ascii: "\t") }
        }
        fieldsInRow += 1
    }

    private mutating func appendNull() {
        switch format {
        case .text: writeASCII(UInt8(ascii: "\\"), UInt8(ascii: "N"))
        case .binary: write(4) { Self.store(Int32(-1), at: $0) }
        }
    }

    /// A binary field: its length, then `prefix` (a version byte) when given, then `payload`.
    private mutating func writeField(_ payload: UnsafeBufferPointer<UInt8>, prefix: UInt8? = nil) {
        let extra = prefix == nil ? 0 : 1
        write(4 + extra + payload.count) { target in
            Self.store(Int32(extra + payload.count), at: target)
            if let prefix { target[4] = prefix }
            if let base = payload.baseAddress { (target + 4 + extra).update(from: base, count: payload.count) }
        }
    }

    /// A text field (in the text format also json or jsonb); `nil` is NULL. Throws for a NUL character.
    public mutating func append(_ value: String?) throws {
        beginField()
        guard let value else { return appendNull() }
        try withUTF8(of: value) { try appendText($0) }
    }

    /// A `jsonb` field from its JSON text; `nil` is NULL. Throws for a NUL character.
    public mutating func append(jsonb value: String?) throws {
        beginField()
        guard let value else { return appendNull() }
        try withUTF8(of: value) { text in
            guard format == .binary else { return try appendEscaped(text) }
            try checkNoNUL(text)
            // jsonb's binary form: a version byte, then the JSON text.
            writeField(text, prefix: 1)
        }
    }

    /// A text field from UTF-8 bytes. Throws for a NUL character, which text cannot hold.
    public mutating func append(utf8 value: UnsafeBufferPointer<UInt8>) throws {
        beginField()
        try appendText(value)
    }

    /// `value`'s UTF-8 bytes, borrowed: `withUTF8` on a copy retained and released the string.
    private func withUTF8<Result>(of value: String, _ body: (UnsafeBufferPointer<UInt8>) throws -> Result) rethrows
        -> Result
    {
        if let result = try value.utf8.withContiguousStorageIfAvailable(body) { return result }
        var copy = value
        return try copy.withUTF8(body)
    }

    private mutating func appendText(_ text: UnsafeBufferPointer<UInt8>) throws {
        guard format == .binary else { return try appendEscaped(text) }
        try checkNoNUL(text)
        writeField(text)
    }

    private func checkNoNUL(_ text: UnsafeBufferPointer<UInt8>) throws {
        guard let base = text.baseAddress, memchr(base, 0, text.count) != nil else { return }
        throw nulError()
    }

    private func nulError() -> DatabaseError {
        DatabaseError(
            .invalidValue, "a text value contains a NUL character (U+0000), which PostgreSQL text cannot hold",
            sqlState: .characterNotInRepertoire, context: "COPY row \(rowCount + 1)")
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
                throw nulError()
            case UInt8(ascii: "\\"): escape = UInt8(ascii: "\\")
            case UInt8(ascii: "\n"): escape = UInt8(ascii: "n")
            case UInt8(ascii: "\r"): escape = UInt8(ascii: "r")
            case UInt8(ascii: "\t"): escape = UInt8(ascii: "t")
            default: continue
            }
            writeBytes(UnsafeBufferPointer(rebasing: text[runStart..<index - 1]))
            writeASCII(UInt8(ascii: "\\"), escape)
            runStart = index
        }
        writeBytes(UnsafeBufferPointer(rebasing: text[runStart...]))
    }

    /// A double precision field, written so it reads back bit for bit; `nil` is NULL.
    public mutating func append(_ value: Double?) {
        beginField()
        guard let value else { return appendNull() }
        switch format {
        case .text:
            var text = value.postgresText
            text.withUTF8 { writeBytes($0) }
        case .binary:
            appendDouble(value)
        }
    }

    private mutating func appendDouble(_ value: Double) {
        write(12) {
            Self.store(Int32(8), at: $0)
            Self.store(value.bitPattern, at: $0 + 4)
        }
    }

    /// A double field given as the decimal text `value` was parsed from (JSON's number grammar, which float8's
    /// input reads the same, correctly rounded): in text the text goes as it is, sparing the shortest digits a
    /// double needs worked out again; in binary the double does. `value` must be finite and not zero (whose text
    /// may be `-0`, or below the smallest double, which the server refuses).
    public mutating func append(numberText text: UnsafeBufferPointer<UInt8>, of value: Double) {
        assert(value.isFinite && value != 0 && !text.isEmpty, "a finite number other than zero")
        assert(
            text.allSatisfy {
                (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || Array("+-.eE".utf8).contains($0)
            },
            "JSON's number grammar")
        beginField()
        switch format {
        case .text: writeBytes(text)
        case .binary: appendDouble(value)
        }
    }

    /// An integer (`bigint`) field; `nil` is NULL.
    public mutating func append(_ value: Int64?) {
        beginField()
        guard let value else { return appendNull() }
        switch format {
        case .text:
            var text = String(value)
            text.withUTF8 { writeBytes($0) }
        case .binary:
            write(12) {
                Self.store(Int32(8), at: $0)
                Self.store(value, at: $0 + 4)
            }
        }
    }

    /// An integer (`bigint`) field; `nil` is NULL.
    public mutating func append(_ value: Int?) {
        append(value.map(Int64.init))
    }

    /// A boolean field; `nil` is NULL.
    public mutating func append(_ value: Bool?) {
        beginField()
        guard let value else { return appendNull() }
        switch format {
        case .text:
            write(1) { $0.pointee = UInt8(ascii: value ? "t" : "f") }
        case .binary:
            write(5) {
                Self.store(Int32(1), at: $0)
                $0[4] = value ? 1 : 0
            }
        }
    }

    /// A `text[]` field; `nil` is NULL.
    public mutating func append(_ value: [String]?) throws {
        guard format == .binary, let value else { return try append(value?.queryText) }
        beginField()
        // One dimension (none when empty), no NULLs, `text` elements, each its length then its bytes.
        let lengthAt = byteCount
        let dimensions: Int32 = value.isEmpty ? 0 : 1
        write(value.isEmpty ? 16 : 24) { target in
            Self.store(Int32(0), at: target)  // the field's length, known at the end
            Self.store(dimensions, at: target + 4)
            Self.store(Int32(0), at: target + 8)  // no NULLs
            Self.store(Self.textOID, at: target + 12)
            guard dimensions == 1 else { return }
            Self.store(Int32(value.count), at: target + 16)
            Self.store(Int32(1), at: target + 20)  // the lower bound
        }
        for element in value { try withUTF8(of: element) { try appendText($0) } }
        let length = Int32(byteCount - lengthAt - 4)
        storage.withUnsafeMutableBufferPointer { Self.store(length, at: $0.baseAddress.unsafelyUnwrapped + lengthAt) }
    }

    /// Ends the current row.
    public mutating func endRow() {
        switch format {
        case .text:
            write(1) { $0.pointee = UInt8(ascii: "\n") }
        case .binary:
            precondition(fieldsInRow > 0, "a row has fields")
            let start = rowStart, fields = Int16(fieldsInRow)
            storage.withUnsafeMutableBufferPointer { Self.store(fields, at: $0.baseAddress.unsafelyUnwrapped + start) }
        }
        fieldsInRow = 0
        rowCount += 1
    }

    /// Forgets the encoded bytes (after sending them), keeping the buffer's capacity.
    public mutating func removeAllBytes() {
        byteCount = 0
    }

    /// Drops the rows encoded after the first `byteCount` bytes, `rows` of them (all ended).
    package mutating func truncate(toByteCount byteCount: Int, droppingRows rows: Int) {
        precondition(fieldsInRow == 0 && byteCount <= self.byteCount)
        self.byteCount = byteCount
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
        if encoder.byteCount >= Self.flushThreshold { try flush() }
    }

    /// Sends whatever is buffered.
    func flush() throws {
        guard encoder.byteCount > 0 else { return }
        try connection.putCopyData(encoder.bytes, statement: statement)
        bytesSent += encoder.byteCount
        encoder.removeAllBytes()
    }
}
