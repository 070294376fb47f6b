import CLibPQ
import Foundation

/// A connection to PostgreSQL through libpq. Synchronous, and not `Sendable`: parallel work opens more
/// connections.
///
/// ```swift
/// let connection = try Connection(conninfo: "postgresql://localhost/app")
/// let names = try connection.query("SELECT username FROM users WHERE uid = \(uid)")
/// ```
public final class Connection {
    let handle: OpaquePointer
    /// Notices and warnings the server sent since they were last taken (Storage never prints them).
    public private(set) var notices: [String] = []

    /// Connects from a libpq conninfo string or `postgresql://` URI, with libpq's own environment
    /// (PGHOST, PGPORT, PGUSER, PGDATABASE, PGPASSWORD, PGSERVICE, ~/.pgpass, PGSSLMODE …) filling in
    /// whatever the string leaves out, exactly as psql does. An empty string means "the environment only".
    ///
    /// `parameters` override the string's settings (the embedded cluster passes its socket this way).
    /// The client encoding is always UTF8.
    public convenience init(conninfo: String, parameters: [(String, String)] = []) throws {
        // Later keywords override earlier ones, and the expanded dbname comes first.
        var pairs: [(String, String)] = [("dbname", conninfo)]
        pairs += parameters
        pairs += [("client_encoding", "UTF8"), ("fallback_application_name", "admin")]
        try self.init(
            connecting: pairs, expandingDatabase: true, password: ConnectionOptions.parse(conninfo)?["password"])
    }

    /// Connects with the settings of another connection, for work spread over several sessions.
    public convenience init(settings: ConnectionSettings) throws {
        // The database's name is a name here, not a conninfo string to expand.
        try self.init(
            connecting: settings.pairs, expandingDatabase: false,
            password: settings.pairs.last { $0.0 == "password" }?.1)
    }

    /// Connects with libpq's keywords and values; `password` (the one among them, if any) is kept out of the
    /// error message.
    private init(connecting pairs: [(String, String)], expandingDatabase: Bool, password: String?) throws {
        let handle = Self.connect(pairs, expandingDatabase: expandingDatabase)
        // libpq: "Note that when PQconnectdb returns a non-null pointer ... you should call PQfinish when you are
        // finished with it ... even if the connection attempt fails."
        guard PQstatus(handle) == CONNECTION_OK else {
            var error = DatabaseError(
                .connectionFailed, Self.scrubbed(Self.errorMessage(of: handle), password: password))
            // libpq: "Returns true if the connection authentication method required a password, but none was
            // available" — the caller may ask the operator for one and try again.
            error.needsPassword = PQconnectionNeedsPassword(handle) == 1
            PQfinish(handle)
            throw error
        }
        self.handle = handle
        installNoticeReceiver()
    }

    deinit {
        heldCopyOutRow.map { PQfreemem($0) }
        PQfinish(handle)
    }

    /// The row `nextCopyOutRow` lent last, freed at the next call (libpq: "The data returned … must be freed using
    /// PQfreemem").
    var heldCopyOutRow: UnsafeMutablePointer<CChar>?
    /// The statement of the COPY begun with `beginCopyOut`, for its errors.
    var copyOutStatement = ""

    /// The settings this connection was made with (libpq's `PQconninfo`: host, port, role, database, password,
    /// options), to open more like it on any thread (`init(settings:)`).
    public var settings: ConnectionSettings {
        var pairs: [(String, String)] = []
        if let options = PQconninfo(handle) {
            defer { PQconninfoFree(options) }
            var option = options
            while let keyword = option.pointee.keyword {
                if let value = option.pointee.val { pairs.append((String(cString: keyword), String(cString: value))) }
                option += 1
            }
        }
        return ConnectionSettings(pairs: pairs)
    }

    private static func connect(_ pairs: [(String, String)], expandingDatabase: Bool) -> OpaquePointer {
        let keywords = pairs.map { strdup($0.0) }
        let values = pairs.map { strdup($0.1) }
        defer { (keywords + values).forEach { free($0) } }
        let keywordPointers = keywords.map { UnsafePointer($0) } + [nil]
        let valuePointers = values.map { UnsafePointer($0) } + [nil]
        guard let handle = PQconnectdbParams(keywordPointers, valuePointers, expandingDatabase ? 1 : 0) else {
            fatalError("libpq could not allocate a connection object (out of memory)")
        }
        return handle
    }

    static func errorMessage(of handle: OpaquePointer) -> String {
        String(cString: PQerrorMessage(handle)).trimmingTrailingNewlines()
    }

    /// libpq's messages do not include passwords, but a malformed URI may be quoted back: remove the password
    /// wherever it appears, whatever libpq does in future.
    static func scrubbed(_ message: String, password: String?) -> String {
        guard let password, !password.isEmpty else { return message }
        return message.replacingOccurrences(of: password, with: "********")
    }

    private func installNoticeReceiver() {
        let context = Unmanaged.passUnretained(self).toOpaque()
        PQsetNoticeReceiver(
            handle,
            { context, result in
                guard let context, let result else { return }
                let connection = Unmanaged<Connection>.fromOpaque(context).takeUnretainedValue()
                connection.notices.append(String(cString: PQresultErrorMessage(result)).trimmingTrailingNewlines())
            }, context)
    }

    /// Returns the notices received so far and forgets them.
    public func takeNotices() -> [String] {
        defer { notices.removeAll() }
        return notices
    }

    // MARK: Describing the connection

    /// The role connected as.
    public var user: String { String(cString: PQuser(handle)) }
    /// The host name, or the directory of the Unix socket.
    public var host: String { String(cString: PQhost(handle)) }
    /// The port (also the socket's file name suffix).
    public var port: String { String(cString: PQport(handle)) }
    /// The database.
    public var database: String { String(cString: PQdb(handle)) }

    /// The server's version string (`15.18 (Debian 15.18-0+deb12u1)`).
    public var serverVersion: String {
        PQparameterStatus(handle, "server_version").map { String(cString: $0) } ?? "unknown"
    }

    /// Whether the connection is still usable, as far as libpq knows without a round trip.
    public var isConnected: Bool { !isBroken && PQstatus(handle) == CONNECTION_OK }

    /// Set once an error showed the connection lost, even where libpq has not noticed yet (a server that was
    /// stopped answers the next statement with an error of libpq's own, while the status still says OK).
    private var isBroken = false

    /// Whether a transaction block is open on this connection.
    public var isInTransaction: Bool {
        let status = PQtransactionStatus(handle)
        return status == PQTRANS_INTRANS || status == PQTRANS_INERROR
    }

    // MARK: Running statements

    /// Runs one statement and returns its rows.
    @discardableResult
    public func query(_ query: Query) throws -> QueryResult {
        try check(send(query), statement: query.sql, expecting: [PGRES_COMMAND_OK, PGRES_TUPLES_OK])
    }

    /// Sends one statement with its parameters (declared types, values in text format) and returns libpq's result.
    func send(_ query: Query) throws -> OpaquePointer? {
        try withParameters(of: query) { types, values in
            PQexecParams(handle, query.sql, Int32(values.count), types, values, nil, nil, 0)
        }
    }

    /// Sends a statement without waiting for its result, so the server works while the caller does; collect the
    /// result with `receive(_:)` before sending anything else.
    package func sendWithoutWaiting(_ query: Query) throws {
        let sent = try withParameters(of: query) { types, values in
            PQsendQueryParams(handle, query.sql, Int32(values.count), types, values, nil, nil, 0)
        }
        guard sent == 1 else { throw connectionError(statement: query.sql) }
    }

    /// The rows of a statement sent with `sendWithoutWaiting`.
    package func receive(_ query: Query) throws -> QueryResult {
        let result = try check(
            PQgetResult(handle), statement: query.sql, expecting: [PGRES_COMMAND_OK, PGRES_TUPLES_OK])
        drainResults()
        return result
    }

    /// Runs one statement and returns how many rows it affected.
    @discardableResult
    public func execute(_ query: Query) throws -> Int {
        try self.query(query).affectedRows
    }

    /// Runs a script of several statements through the simple query protocol (migrations); no parameters.
    public func execute(script sql: String) throws {
        guard !sql.utf8.contains(0) else {
            throw DatabaseError(
                .invalidValue, "the script contains a NUL character", sqlState: .characterNotInRepertoire)
        }
        let result = PQexec(handle, sql)
        _ = try check(result, statement: sql, expecting: [PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY])
    }

    /// `query`'s parameters as libpq takes them: their type OIDs and their values as C strings (NULL for SQL
    /// NULL), after refusing a value with a NUL.
    private func withParameters<Result>(
        of query: Query, _ body: ([Oid], [UnsafePointer<CChar>?]) throws -> Result
    ) throws -> Result {
        try Self.refuseNUL(in: query)
        let types = query.types.map { Oid($0.rawValue) }
        return try withCStringArray(query.binds) { try body(types, $0) }
    }

    /// PostgreSQL text cannot hold U+0000, and libpq passes parameters as C strings, which would silently cut
    /// the value at the NUL: refuse before anything is sent.
    static func refuseNUL(in query: Query) throws {
        for (index, bind) in query.binds.enumerated() where bind?.utf8.contains(0) == true {
            throw DatabaseError(
                .invalidValue,
                "parameter $\(index + 1) contains a NUL character (U+0000), which PostgreSQL text cannot hold",
                sqlState: .characterNotInRepertoire, statement: query.sql)
        }
    }

    /// Turns a libpq result into a `QueryResult`, or into a `DatabaseError` carrying the server's diagnostics.
    func check(_ result: OpaquePointer?, statement: String, expecting accepted: [ExecStatusType]) throws -> QueryResult
    {
        guard let result else {
            throw connectionError(statement: statement)
        }
        let status = PQresultStatus(result)
        if accepted.contains(status) {
            return QueryResult(pointer: result, statement: statement)
        }
        defer { PQclear(result) }
        if status == PGRES_FATAL_ERROR || status == PGRES_NONFATAL_ERROR,
            let error = serverError(result, statement: statement)
        {
            throw marked(error)
        }
        if status == PGRES_FATAL_ERROR {
            // An error of libpq's own, without a SQLSTATE: the connection failed (the server went away).
            let message = String(cString: PQresultErrorMessage(result)).trimmingTrailingNewlines()
            throw marked(
                DatabaseError(
                    .connectionLost, message.isEmpty ? "the connection to the server was lost" : message,
                    statement: statement))
        }
        if !isConnected { throw connectionError(statement: statement) }
        throw DatabaseError(
            .server, "unexpected result status \(String(cString: PQresStatus(status)))", statement: statement)
    }

    /// Notes a lost connection, so that `isConnected` says so from now on.
    private func marked(_ error: DatabaseError) -> DatabaseError {
        if error.kind == .connectionLost { isBroken = true }
        return error
    }

    private func serverError(_ result: OpaquePointer, statement: String) -> DatabaseError? {
        func field(_ code: Unicode.Scalar) -> String? {
            PQresultErrorField(result, Int32(code.value)).map { String(cString: $0) }
        }
        guard let message = field("M") else { return nil }
        let sqlState = field("C").map(SQLState.init(rawValue:))
        // A FATAL error ends the session on the server's side (57P01 after a shutdown, say).
        let severity = field("V") ?? field("S")
        let lost = !isConnected || sqlState?.isConnectionException == true || severity == "FATAL" || severity == "PANIC"
        return DatabaseError(
            lost ? .connectionLost : .server, message, sqlState: sqlState, detail: field("D"),
            hint: field("H"),
            constraint: field("n"), statement: statement, context: field("W"))
    }

    func connectionError(statement: String?) -> DatabaseError {
        let message = Self.errorMessage(of: handle)
        return marked(
            DatabaseError(
                isConnected ? .server : .connectionLost,
                message.isEmpty ? "the connection to the server was lost" : message,
                statement: statement))
    }

    /// A handle that cancels whatever this connection is running, from another thread or a signal handler.
    public func makeCancelHandle() -> CancelHandle? {
        PQgetCancel(handle).map(CancelHandle.init)
    }
}

/// What a connection was made with, as libpq reports it (`Connection.settings`); it holds the password, if any.
public struct ConnectionSettings: Sendable {
    let pairs: [(String, String)]

    /// The same settings (role, password, database, options) for the server at `host` and `port`: a Citus
    /// worker, which the coordinator reaches with the role and database of its own sessions.
    public func at(host: String, port: Int) -> ConnectionSettings {
        let address: Set = ["host", "hostaddr", "port"]
        return ConnectionSettings(
            pairs: pairs.filter { !address.contains($0.0) } + [("host", host), ("port", "\(port)")])
    }
}

/// Asks the server to cancel a connection's running statement (libpq's PQcancel, which is safe to call from
/// another thread).
public final class CancelHandle: @unchecked Sendable {
    private let pointer: OpaquePointer

    init(_ pointer: OpaquePointer) { self.pointer = pointer }

    // libpq: "PQfreeCancel frees a data object previously created by PQgetCancel."
    deinit { PQfreeCancel(pointer) }

    /// Sends the cancel request; returns whether it was sent (the statement may have finished anyway).
    @discardableResult
    public func cancel() -> Bool {
        var buffer = [CChar](repeating: 0, count: 256)
        return PQcancel(pointer, &buffer, Int32(buffer.count)) == 1
    }
}

/// Parses libpq connection strings without connecting.
public enum ConnectionOptions {
    /// The settings a conninfo string or URI spells out (`host`, `password`, …); `nil` when it does not parse.
    public static func parse(_ conninfo: String) -> [String: String]? {
        guard !conninfo.isEmpty else { return [:] }
        var errorMessage: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(conninfo, &errorMessage) else {
            errorMessage.map { PQfreemem($0) }
            return nil
        }
        defer { PQconninfoFree(options) }
        var settings: [String: String] = [:]
        var option = options
        while let keyword = option.pointee.keyword {
            if let value = option.pointee.val {
                settings[String(cString: keyword)] = String(cString: value)
            }
            option += 1
        }
        return settings
    }
}

/// Calls `body` with the strings as a C array of C strings (`nil` entries for SQL NULL).
func withCStringArray<Result>(
    _ strings: [String?], _ body: ([UnsafePointer<CChar>?]) throws -> Result
) rethrows -> Result {
    // strdup fails only when memory is out, where Swift's own allocations trap too.
    let copies = strings.map { $0.flatMap { strdup($0) } }
    defer { copies.forEach { $0.map { free($0) } } }
    return try body(copies.map { $0.map { UnsafePointer($0) } })
}

extension String {
    package func trimmingTrailingNewlines() -> String {
        var text = self
        while text.last?.isNewline == true { text.removeLast() }
        return text
    }
}
