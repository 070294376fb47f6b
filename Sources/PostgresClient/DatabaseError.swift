import Foundation

/// The one error type of PostgresClient: a connection that could not be made or broke, a statement the server
/// rejected (with its SQLSTATE and diagnostics), a value PostgreSQL cannot hold, a result that does not decode.
///
/// `description` never includes bind values or passwords: only the statement text (whose values travel
/// separately as parameters) and the server's own diagnostics.
public struct DatabaseError: Error, CustomStringConvertible, Sendable {
    /// What went wrong, broadly.
    public enum Kind: Sendable, Equatable {
        /// No connection could be made (bad target, server down, authentication).
        case connectionFailed
        /// The connection broke while in use; a new one may succeed.
        case connectionLost
        /// The server rejected a statement; `sqlState` says why.
        case server
        /// A value cannot be sent to PostgreSQL as it is (a NUL character in text, say).
        case invalidValue
        /// A result column could not be decoded into the requested Swift type.
        case decoding
    }

    /// What went wrong, broadly.
    public var kind: Kind
    /// The SQLSTATE code, when the server (or this module, mimicking it) supplied one.
    public var sqlState: SQLState?
    /// The primary, human-readable message.
    public var message: String
    /// Secondary detail, as the server's DETAIL field.
    public var detail: String?
    /// A suggestion of what to do, as the server's HINT field.
    public var hint: String?
    /// The constraint that was violated, when there was one.
    public var constraint: String?
    /// The statement that failed, without its bind values.
    public var statement: String?
    /// The server's CONTEXT field (where in a function or script the statement failed).
    public var context: String?
    /// A `.connectionFailed` because the server asked for a password and none was given: one may be asked for.
    public var needsPassword = false

    /// Creates an error; only `kind` and `message` are required.
    public init(
        _ kind: Kind, _ message: String, sqlState: SQLState? = nil, detail: String? = nil, hint: String? = nil,
        constraint: String? = nil, statement: String? = nil, context: String? = nil
    ) {
        self.kind = kind
        self.message = message
        self.sqlState = sqlState
        self.detail = detail
        self.hint = hint
        self.constraint = constraint
        self.statement = statement
        self.context = context
    }

    /// The message in psql's layout: `message (SQLSTATE …)`, then DETAIL, HINT, CONTEXT and STATEMENT lines.
    public var description: String {
        Self.psqlLayout(message, sqlState: sqlState, detail: detail, hint: hint, context: context, statement: statement)
    }

    /// A message and its diagnostics laid out as psql shows them (the layers above use it too).
    package static func psqlLayout(
        _ message: String, sqlState: SQLState?, detail: String?, hint: String?, context: String?, statement: String?
    ) -> String {
        var text = message
        if let sqlState { text += " (SQLSTATE \(sqlState.rawValue))" }
        if let detail { text += "\nDETAIL:  \(detail)" }
        if let hint { text += "\nHINT:  \(hint)" }
        if let context { text += "\nCONTEXT:  \(context)" }
        if let statement { text += "\nSTATEMENT:  \(abbreviated(statement))" }
        return text
    }

    /// Long statements (a whole migration) are cut so an error stays readable.
    private static func abbreviated(_ statement: String) -> String {
        let trimmed = statement.trimmingCharacters(in: .whitespacesAndNewlines)
        guard trimmed.count > 500 else { return trimmed }
        return String(trimmed.prefix(500)) + " …"
    }
}

/// A five-character SQLSTATE code, matchable in `catch` through its named constants.
public struct SQLState: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The code, e.g. `23505`.
    public let rawValue: String
    /// Wraps a code as the server sent it.
    public init(rawValue: String) { self.rawValue = rawValue }
    /// The code itself.
    public var description: String { rawValue }

    /// `23505`: a unique or primary key constraint was violated.
    public static let uniqueViolation = SQLState(rawValue: "23505")
    /// `23503`: a foreign key constraint was violated.
    public static let foreignKeyViolation = SQLState(rawValue: "23503")
    /// `23514`: a check constraint was violated.
    public static let checkViolation = SQLState(rawValue: "23514")
    /// `22021`: a character the encoding cannot hold (used for NUL in text).
    public static let characterNotInRepertoire = SQLState(rawValue: "22021")
    /// `40001`: a serializable transaction must be retried.
    public static let serializationFailure = SQLState(rawValue: "40001")
    /// `40P01`: the transaction was chosen as a deadlock victim and must be retried.
    public static let deadlockDetected = SQLState(rawValue: "40P01")
    /// `3D000`: the database does not exist.
    public static let invalidCatalogName = SQLState(rawValue: "3D000")
    /// `42P01`: the table does not exist.
    public static let undefinedTable = SQLState(rawValue: "42P01")
    /// `57014`: the statement was cancelled (Ctrl-C, statement_timeout).
    public static let queryCanceled = SQLState(rawValue: "57014")
    /// `25006`: a write was attempted in a read-only transaction.
    public static let readOnlySQLTransaction = SQLState(rawValue: "25006")
    /// `55P03`: a lock could not be taken without waiting (another maintenance run holds it).
    public static let lockNotAvailable = SQLState(rawValue: "55P03")
    /// `53100`: the server's disk is full.
    public static let diskFull = SQLState(rawValue: "53100")
    /// `42501`: the role lacks a privilege.
    public static let insufficientPrivilege = SQLState(rawValue: "42501")
    /// `42883`: no function of that name and arguments exists.
    public static let undefinedFunction = SQLState(rawValue: "42883")
    /// `XX000`: an internal error (Citus reports a worker's failure so, whatever it was there).
    public static let internalError = SQLState(rawValue: "XX000")

    /// Class 08: the connection failed or broke.
    public var isConnectionException: Bool { rawValue.hasPrefix("08") }
}
