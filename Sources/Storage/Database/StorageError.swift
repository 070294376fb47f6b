import FirebaseTree
import Foundation

/// The one error type of the Storage layer: a server error with its SQLSTATE and diagnostics, a failed or
/// lost connection, a value PostgreSQL cannot hold, a migration or embedded-cluster problem.
///
/// `description` never includes bind values or passwords: only the statement text (whose values travel
/// separately as parameters) and the server's own diagnostics.
public struct StorageError: Error, CustomStringConvertible, Sendable {
    /// What went wrong, broadly; callers map it to exit codes and retries.
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
        /// The schema on the server does not agree with this binary's migrations.
        case migration
        /// The embedded PostgreSQL cluster could not be set up, started or stopped.
        case cluster
        /// Input to import cannot be read or is not well-formed (malformed JSON, invalid UTF-8, a truncated file).
        case malformedInput
        /// A user, post or chat the operation names does not exist; nothing was written.
        case notFound
        /// The operation breaks a rule of the app (following oneself, an empty message); nothing was written.
        case refused
        /// A local file this layer works with (a temporary file) could not be written or read.
        case io
    }

    /// What went wrong, broadly.
    public var kind: Kind
    /// The SQLSTATE code, when the server (or this layer, mimicking it) supplied one.
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
    /// Where this layer was when it failed (for example "applying migration 0002_likes.sql").
    public var context: String?
    /// Where in the input a `.malformedInput` error was found.
    public var inputPosition: JSONReader.Position?
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

    /// The storage layer's form of a tree error (malformed or unreadable input, a failed compression), keeping
    /// where in the input it was found.
    public init(_ error: TreeError) {
        let kind: Kind = switch error.kind {
        case .malformedInput, .unreadable: .malformedInput
        case .compression: .io
        }
        self.init(kind, error.message, context: error.path.map { "reading \($0)" })
        inputPosition = error.position
    }

    /// Runs `body`, turning a tree error it throws into a storage error: Storage's API throws one error type.
    static func wrappingTreeErrors<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as TreeError {
            throw StorageError(error)
        }
    }

    /// The message in psql's layout: `ERROR:  message`, then DETAIL, HINT, CONTEXT and STATEMENT lines.
    public var description: String {
        var text = message
        if let sqlState { text += " (SQLSTATE \(sqlState.rawValue))" }
        if let detail { text += "\nDETAIL:  \(detail)" }
        if let hint { text += "\nHINT:  \(hint)" }
        if let context { text += "\nCONTEXT:  \(context)" }
        if let statement { text += "\nSTATEMENT:  \(Self.abbreviated(statement))" }
        return text
    }

    /// What to do about a server error that came without a hint of its own.
    static func hint(for sqlState: SQLState) -> String? {
        switch sqlState {
        case .diskFull:
            "The transaction was rolled back, but what it wrote keeps its disk space until VACUUM gives it back: "
                + "free some space, then run VACUUM on the tables (admin: `vacuum`), and CHECKPOINT as a superuser "
                + "to recycle the write-ahead log it filled."
        default: nil
        }
    }

    /// Returns a copy with `context` set, keeping an inner context after the new one.
    public func adding(context outer: String) -> StorageError {
        var copy = self
        copy.context = context.map { "\(outer): \($0)" } ?? outer
        return copy
    }

    /// Long statements (a whole migration) are cut so an error stays readable.
    static func abbreviated(_ statement: String) -> String {
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

    /// Class 08: the connection failed or broke.
    public var isConnectionException: Bool { rawValue.hasPrefix("08") }
}
