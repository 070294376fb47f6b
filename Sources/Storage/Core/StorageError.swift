import FirebaseTree
import Foundation
internal import PostgresClient

/// The one error type of the Storage layer: a server error with its SQLSTATE and diagnostics, a failed or
/// lost connection, a value PostgreSQL cannot hold, a migration or embedded-cluster problem, input that cannot
/// be read. PostgresClient's `DatabaseError` and FirebaseTree's `TreeError` become this at Storage's edge.
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
        /// The server rejected a statement; `sqlStateCode` says why.
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
        /// The server's place in a Citus cluster does not allow the operation (a worker, no Citus, no workers).
        case distribution
    }

    /// What went wrong, broadly.
    public var kind: Kind

    /// The error of the layer below that this one stands for, kept whole: its diagnostics are this error's
    /// unless Storage words them otherwise (`overrides`).
    enum Cause: Sendable {
        /// A statement, connection or decoding failed in PostgresClient.
        case database(DatabaseError)
        /// FirebaseTree could not read or compress the input.
        case tree(TreeError)
    }

    /// What this error wraps; nil for an error of Storage's own.
    let cause: Cause?

    /// Storage's own diagnostics, or its rewording of the cause's: a field set here (even to nil) wins.
    private struct Overrides: Sendable {
        var sqlState: SQLState??
        var message: String?
        var detail: String??
        var hint: String??
        var constraint: String??
        var statement: String??
        var context: String??
        var inputPosition: JSONReader.Position??
    }
    private var overrides = Overrides()

    private var databaseError: DatabaseError? {
        if case .database(let error) = cause { return error }
        return nil
    }

    private var treeError: TreeError? {
        if case .tree(let error) = cause { return error }
        return nil
    }

    /// The SQLSTATE code, when the server (or this layer, mimicking it) supplied one; Storage's callers act on
    /// `kind` and `remedy` instead, so PostgresClient's type does not leak through the API.
    var sqlState: SQLState? {
        get { overrides.sqlState ?? databaseError?.sqlState }
        set { overrides.sqlState = .some(newValue) }
    }
    /// Whether a lock asked for without waiting (or within `lock_timeout`) was refused: `lockNotAvailable`, or
    /// on Citus a worker's refusal, which Citus reports as the failure of its connection there (XX000, after a
    /// warning that names the lock): Citus takes a `LOCK TABLE`'s locks on the workers before the coordinator's.
    var isLockRefusal: Bool {
        sqlState == .lockNotAvailable
            || (sqlState == .internalError && message.hasPrefix("failure on connection marked as essential"))
    }
    /// The SQLSTATE code as PostgreSQL spells it (`"55P03"`: lock not available), for a caller that must tell
    /// one server error from another; nil when there is none.
    public var sqlStateCode: String? { sqlState?.rawValue }
    /// The primary, human-readable message.
    public var message: String {
        get { overrides.message ?? databaseError?.message ?? treeError?.message ?? "" }
        set { overrides.message = newValue }
    }
    /// Secondary detail, as the server's DETAIL field.
    public var detail: String? {
        get { overrides.detail ?? databaseError?.detail }
        set { overrides.detail = .some(newValue) }
    }
    /// A suggestion of what to do, as the server's HINT field (or this layer's, where the server gave none).
    public var hint: String? {
        get { overrides.hint ?? databaseError.flatMap { $0.hint ?? $0.sqlState.flatMap(Self.hint(for:)) } }
        set { overrides.hint = .some(newValue) }
    }
    /// The constraint that was violated, when there was one.
    public var constraint: String? {
        get { overrides.constraint ?? databaseError?.constraint }
        set { overrides.constraint = .some(newValue) }
    }
    /// The statement that failed, without its bind values.
    public var statement: String? {
        get { overrides.statement ?? databaseError?.statement }
        set { overrides.statement = .some(newValue) }
    }
    /// Where this layer was when it failed (for example "applying migration 0002_likes.sql").
    public var context: String? {
        get { overrides.context ?? databaseError?.context ?? treeError?.path.map { "reading \($0)" } }
        set { overrides.context = .some(newValue) }
    }
    /// Where in the input a `.malformedInput` error was found.
    public var inputPosition: JSONReader.Position? {
        get { overrides.inputPosition ?? treeError?.position }
        set { overrides.inputPosition = .some(newValue) }
    }
    /// A `.connectionFailed` because the server asked for a password and none was given: one may be asked for.
    public var needsPassword: Bool { databaseError?.needsPassword ?? false }
    /// What would let the operation through or put things right, for a front end to word with its own options
    /// (`hint` says it without naming any).
    public var remedy: Remedy?

    /// What would let a refused operation through, or put right what a failed one left.
    public enum Remedy: Sendable, Equatable {
        /// Import again allowing rejected values (more than `allowed`, the number allowed this time).
        case allowRejects(allowed: Int)
        /// Import at the path of the whole record, not inside it.
        case importWholeRecord(path: [String])
        /// Allow replacing a node with nothing.
        case allowEmptying
        /// Free disk space, VACUUM the tables and CHECKPOINT, to get back what a rolled-back write used.
        case reclaimSpace
        /// Wait for the check, repair or import that holds the maintenance lock, or run again later.
        case waitForMaintenance
        /// A lock wait ran out (`lock_timeout`): try again later, or allow a longer wait.
        case waitLonger
        /// Use another directory for the embedded cluster (the hint says why).
        case chooseDataDirectory
        /// Use a PostgreSQL server other than the embedded one.
        case useAnotherServer
    }

    /// The error with `remedy` attached.
    public func remedied(_ remedy: Remedy) -> StorageError {
        var error = self
        error.remedy = remedy
        return error
    }

    /// Creates an error of this layer's own; only `kind` and `message` are required.
    public init(_ kind: Kind, _ message: String, detail: String? = nil, hint: String? = nil, context: String? = nil) {
        self.init(kind, message, sqlState: nil, detail: detail, hint: hint, context: context)
    }

    /// Creates an error with a server's diagnostics (or this layer's, mimicking one).
    init(
        _ kind: Kind, _ message: String, sqlState: SQLState?, detail: String? = nil, hint: String? = nil,
        constraint: String? = nil, statement: String? = nil, context: String? = nil
    ) {
        self.kind = kind
        cause = nil
        overrides = Overrides(
            sqlState: .some(sqlState), message: message, detail: .some(detail), hint: .some(hint),
            constraint: .some(constraint), statement: .some(statement), context: .some(context))
    }

    /// The storage layer's form of a tree error (malformed or unreadable input, a failed compression), wrapping
    /// it: where in the input it was found stays its own.
    public init(_ error: TreeError) {
        kind =
            switch error.kind {
            case .malformedInput, .unreadable, .unordered: .malformedInput
            case .compression, .scratchSpace: .io
            }
        cause = .tree(error)
    }

    /// The storage layer's form of a PostgresClient error, wrapping it, with a hint of what to do where the
    /// server gave none.
    init(_ error: DatabaseError) {
        kind =
            switch error.kind {
            case .connectionFailed: .connectionFailed
            case .connectionLost: .connectionLost
            case .server: .server
            case .invalidValue: .invalidValue
            case .decoding: .decoding
            }
        cause = .database(error)
        if error.sqlState == .diskFull { remedy = .reclaimSpace }
    }

    /// What a statement Ctrl-C cancelled fails with, for work the console stops between statements.
    static let cancelledByUser = StorageError(
        .server, "canceling statement due to user request", sqlState: .queryCanceled)

    /// Runs `body`, turning a database or tree error it throws into a storage error: Storage's API throws one
    /// error type.
    static func converting<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as DatabaseError {
            throw StorageError(error)
        } catch let error as TreeError {
            throw StorageError(error)
        }
    }

    /// The message in psql's layout: `ERROR:  message`, then DETAIL, HINT, CONTEXT and STATEMENT lines.
    public var description: String {
        DatabaseError.psqlLayout(
            message, sqlState: sqlState, detail: detail, hint: hint, context: context, statement: statement)
    }

    /// What to do about a server error that came without a hint of its own.
    static func hint(for sqlState: SQLState) -> String? {
        switch sqlState {
        case .diskFull:
            "The transaction was rolled back, but what it wrote keeps its disk space until VACUUM gives it back: "
                + "free some space, then run VACUUM on the tables, and CHECKPOINT as a superuser to recycle the "
                + "write-ahead log it filled."
        default: nil
        }
    }

    /// Returns a copy with `context` set, keeping an inner context after the new one.
    public func adding(context outer: String) -> StorageError {
        var copy = self
        copy.context = context.map { "\(outer): \($0)" } ?? outer
        return copy
    }
}
