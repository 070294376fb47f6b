import Foundation
import CLibPQ

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

    /// Sends the COPY statement and checks that the server entered the expected copy mode.
    private func start(_ statement: Query, expecting mode: ExecStatusType) throws {
        _ = try check(send(statement), statement: statement.sql, expecting: [mode])
    }

    private func finishCopy(statement: String) throws -> Int {
        let result = try check(PQgetResult(handle), statement: statement, expecting: [PGRES_COMMAND_OK])
        drainResults()
        return result.affectedRows
    }

    /// Reads results until libpq has none left, so the connection is ready for the next command.
    func drainResults() {
        while let result = PQgetResult(handle) {
            PQclear(result)
        }
    }

    func putCopyData(_ bytes: [UInt8], statement: String) throws {
        let status = bytes.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { PQputCopyData(handle, $0.baseAddress, Int32($0.count)) }
        }
        guard status == 1 else { throw connectionError(statement: statement) }
    }
}

/// Encodes rows in COPY's text format and sends them in large chunks.
///
/// Append each field of a row in column order, then call `endRow()`.
public final class CopyInWriter {
    private let connection: Connection
    private let statement: String
    private var buffer: [UInt8] = []
    private var fieldsInRow = 0
    /// Rows ended so far.
    public private(set) var rowCount = 0
    /// Bytes handed to libpq so far.
    public private(set) var bytesSent = 0

    private static let flushThreshold = 1 << 18

    init(connection: Connection, statement: String) {
        self.connection = connection
        self.statement = statement
        buffer.reserveCapacity(Self.flushThreshold + 4096)
    }

    private func beginField() {
        if fieldsInRow > 0 { buffer.append(UInt8(ascii: "\t")) }
        fieldsInRow += 1
    }

    private func appendNull() {
        buffer.append(UInt8(ascii: "\\"))
        buffer.append(UInt8(ascii: "N"))
    }

    /// A text (or json, jsonb) field; `nil` is NULL. Throws for a NUL character, which text cannot hold.
    public func append(_ value: String?) throws {
        beginField()
        guard var value else { return appendNull() }
        try value.withUTF8 { try appendEscaped($0) }
    }

    private func appendEscaped(_ bytes: UnsafeBufferPointer<UInt8>) throws {
        for byte in bytes {
            switch byte {
            case 0:
                throw StorageError(
                    .invalidValue, "a text value contains a NUL character (U+0000), which PostgreSQL text cannot hold",
                    sqlState: .characterNotInRepertoire, statement: statement, context: "COPY row \(rowCount + 1)")
            case UInt8(ascii: "\\"): buffer.append(UInt8(ascii: "\\")); buffer.append(UInt8(ascii: "\\"))
            case UInt8(ascii: "\n"): buffer.append(UInt8(ascii: "\\")); buffer.append(UInt8(ascii: "n"))
            case UInt8(ascii: "\r"): buffer.append(UInt8(ascii: "\\")); buffer.append(UInt8(ascii: "r"))
            case UInt8(ascii: "\t"): buffer.append(UInt8(ascii: "\\")); buffer.append(UInt8(ascii: "t"))
            default: buffer.append(byte)
            }
        }
    }

    /// A double precision field, written so it reads back bit for bit; `nil` is NULL.
    public func append(_ value: Double?) {
        beginField()
        guard let value else { return appendNull() }
        buffer.append(contentsOf: value.postgresText.utf8)
    }

    /// An integer field; `nil` is NULL.
    public func append(_ value: Int64?) {
        beginField()
        guard let value else { return appendNull() }
        buffer.append(contentsOf: String(value).utf8)
    }

    /// An integer field; `nil` is NULL.
    public func append(_ value: Int?) {
        append(value.map(Int64.init))
    }

    /// A boolean field; `nil` is NULL.
    public func append(_ value: Bool?) {
        beginField()
        guard let value else { return appendNull() }
        buffer.append(UInt8(ascii: value ? "t" : "f"))
    }

    /// A `text[]` field; `nil` is NULL.
    public func append(_ value: [String]?) throws {
        try append(value?.queryText)
    }

    /// Ends the current row, sending the buffer when it is large.
    public func endRow() throws {
        buffer.append(UInt8(ascii: "\n"))
        fieldsInRow = 0
        rowCount += 1
        if buffer.count >= Self.flushThreshold { try flush() }
    }

    /// Sends whatever is buffered.
    func flush() throws {
        guard !buffer.isEmpty else { return }
        try connection.putCopyData(buffer, statement: statement)
        bytesSent += buffer.count
        buffer.removeAll(keepingCapacity: true)
    }
}
