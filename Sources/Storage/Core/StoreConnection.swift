import Foundation
internal import PostgresClient

/// The store's connection: PostgresClient's, through which every error arrives as a `StorageError`, and whose
/// transactions explain a lock wait that ran out in the app's terms (who imports).
///
/// Storage code talks to the database through this alone, so no `DatabaseError` crosses Storage's API.
final class StoreConnection {
    /// The `application_name` an import's transaction takes, so that other sessions (the waits of reads, the
    /// maintenance lock's holder) can tell an import holds the tables.
    static let importApplicationName = "admin import"
    /// How a sync names itself in `pg_stat_activity`.
    static let syncApplicationName = "admin sync"
    /// What a mirror names its session in `pg_stat_activity`, so that others can tell whom they wait for.
    static let mirrorApplicationName = "admin mirror"
    /// Names a sync for the rest of its transaction: a utility statement, which takes no snapshot.
    static let namingSync: Query = "SET LOCAL application_name = 'admin sync'"

    /// The connection underneath.
    let base: Connection

    init(_ base: Connection) {
        self.base = base
    }

    /// Where the connection goes, without any password.
    var endpoint: Endpoint {
        Endpoint(user: base.user, host: base.host, port: base.port, database: base.database)
    }

    /// The server's version string.
    var serverVersion: String { base.serverVersion }

    /// Whether the connection is still usable, as far as libpq knows without a round trip.
    var isConnected: Bool { base.isConnected }

    /// Whether a transaction block is open.
    var isInTransaction: Bool { base.isInTransaction }

    /// Returns the notices received so far and forgets them.
    func takeNotices() -> [String] { base.takeNotices() }

    /// A handle that cancels whatever this connection is running, from another thread or a signal handler.
    func makeCancelHandle() -> CancelHandle? { base.makeCancelHandle() }

    /// The sessions a command opened beside this one (a parallel export's readers): cancelling the store cancels
    /// them too.
    let siblings = SiblingSessions()

    /// What opens sessions with this one's settings, on any thread, each registered in `siblings` until it is
    /// closed.
    func siblingOpener() -> @Sendable () throws -> StoreConnection {
        siblingOpener(settings: base.settings)
    }

    /// What opens sessions as `siblingOpener` does, on the server at `host` and `port` (a Citus worker) with this
    /// one's role, database and options.
    func siblingOpener(host: String, port: Int) -> @Sendable () throws -> StoreConnection {
        siblingOpener(settings: base.settings.at(host: host, port: port))
    }

    private func siblingOpener(settings: ConnectionSettings) -> @Sendable () throws -> StoreConnection {
        let siblings = siblings
        return {
            siblings.willOpen?()
            let sibling = StoreConnection(try StorageError.converting { try Connection(settings: settings) })
            sibling.registration = sibling.makeCancelHandle().map { siblings.register($0) }
            sibling.registry = siblings
            return sibling
        }
    }

    /// The session a distributed read holds distributed commits back with while it takes its snapshots.
    private(set) lazy var commitBarrier = CommitBarrier(opening: siblingOpener())

    /// This connection's entry in the registry of the session that opened it.
    private var registration: Int?
    private weak var registry: SiblingSessions?

    /// Runs `body`, a cleanup after a failure, with Ctrl-C's cancel requests held off the store's sessions
    /// (`SiblingSessions.withoutCancels`), whether this is the store's own session or one it opened.
    func withoutCancels<Result>(_ body: () throws -> Result) rethrows -> Result {
        try (registry ?? siblings).withoutCancels(body)
    }

    deinit {
        if let registration { registry?.remove(registration) }
    }

    /// `lock_timeout`'s value for a wait of `milliseconds`: whole milliseconds, rounded up, at most the setting's
    /// largest (about 24.8 days; a longer wait is as good as forever for a lock).
    static func lockTimeoutSetting(milliseconds: Double) -> String {
        "\(Int(min(milliseconds.rounded(.up), Double(Int32.max))))ms"
    }

    /// Sets how long this session's statements wait for a lock before they fail (`lock_timeout`); nil waits as
    /// long as it takes.
    func setLockTimeout(_ timeout: Duration?) throws {
        let setting = timeout.map { Self.lockTimeoutSetting(milliseconds: $0 / .milliseconds(1)) } ?? "0ms"
        try execute("SELECT set_config('lock_timeout', \(setting), false)")
    }

    /// Runs one statement and returns its rows.
    @discardableResult
    func query(_ query: Query) throws -> StoreResult {
        StoreResult(base: try StorageError.converting { try base.query(query) })
    }

    /// Runs one statement and returns the rows it affected.
    @discardableResult
    func execute(_ query: Query) throws -> Int {
        try StorageError.converting { try base.execute(query) }
    }

    /// Runs a script of several statements (a migration).
    func execute(script sql: String) throws {
        try StorageError.converting { try base.execute(script: sql) }
    }

    /// Runs `body` in a transaction (a savepoint inside one): committed when it returns, rolled back when it
    /// throws. A wait for a lock that ran out says who held it when that was an import (a `readOnly` one, that
    /// nothing was read).
    @discardableResult
    func withTransaction<Result>(
        isolation: Connection.IsolationLevel = .readCommitted, readOnly: Bool = false, rollback: Bool = false,
        _ body: () throws -> Result
    ) throws -> Result {
        do {
            return try StorageError.converting {
                try base.withTransaction(isolation: isolation, readOnly: readOnly, rollback: rollback, body)
            }
        } catch let error as StorageError
            where error.sqlState == .lockNotAvailable && error.message.contains("lock timeout") && !isInTransaction
        {
            throw describingLockWait(error, reading: readOnly)
        }
    }

    /// Streams rows into `COPY … FROM STDIN`; returns how many the server stored.
    @discardableResult
    func copyIn(_ statement: Query, _ body: (CopyInWriter) throws -> Void) throws -> Int {
        try StorageError.converting { try base.copyIn(statement, body) }
    }

    /// Streams the rows of `COPY … TO STDOUT` to `body`, one row per call; returns the number of rows.
    @discardableResult
    func copyOut(_ statement: Query, _ body: (UnsafeRawBufferPointer) throws -> Void) throws -> Int {
        try StorageError.converting { try base.copyOut(statement, body) }
    }

    /// Starts `COPY … TO STDOUT` for rows read with `nextCopyOutRow`.
    func beginCopyOut(_ statement: Query) throws {
        try StorageError.converting { try base.beginCopyOut(statement) }
    }

    /// The next row of the COPY begun with `beginCopyOut`, valid until the next call; nil after the last.
    func nextCopyOutRow() throws -> UnsafeRawBufferPointer? {
        try StorageError.converting { try base.nextCopyOutRow() }
    }

    /// Starts `COPY … FROM STDIN` for data sent with `sendCopyData`.
    func beginCopyIn(_ statement: Query) throws {
        try StorageError.converting { try base.beginCopyIn(statement) }
    }

    /// Sends COPY data begun with `beginCopyIn` as one CopyData message.
    func sendCopyData(_ bytes: ArraySlice<UInt8>) throws {
        try StorageError.converting { try base.sendCopyData(bytes) }
    }

    /// Ends the COPY begun with `beginCopyIn`; returns the rows the server stored.
    @discardableResult
    func endCopyIn() throws -> Int {
        try StorageError.converting { try base.endCopyIn() }
    }

    /// Makes the COPY begun with `beginCopyIn` fail, storing nothing of it.
    func abortCopyIn() { base.abortCopyIn() }

    /// Sends a statement without waiting for its result (read it with `receive`).
    func sendWithoutWaiting(_ query: Query) throws {
        try StorageError.converting { try base.sendWithoutWaiting(query) }
    }

    /// The result of the statement sent with `sendWithoutWaiting`.
    func receive(_ query: Query) throws -> StoreResult {
        StoreResult(base: try StorageError.converting { try base.receive(query) })
    }

    /// Reads results until none is left, so the connection is ready for the next command.
    func drainResults() { base.drainResults() }

    /// Starts receiving notifications on `channel`.
    func listen(_ channel: String) throws {
        try StorageError.converting { try base.listen(channel) }
    }

    /// Stops receiving on `channel`.
    func unlisten(_ channel: String) throws {
        try StorageError.converting { try base.unlisten(channel) }
    }

    /// The notifications that arrived, waiting up to `timeout` seconds for the first.
    func notifications(waitingAtMost timeout: TimeInterval) throws -> [ServerNotification] {
        try StorageError.converting { try base.notifications(waitingAtMost: timeout) }
    }

    /// `error`, a wait for a lock that ran out (`lock_timeout`), saying who held it when that was an import, and
    /// without the statement that waited (the operator did not write it).
    private func describingLockWait(_ error: StorageError, reading: Bool) -> StorageError {
        var error = error
        error.statement = nil
        error.context = nil
        let timeout = (try? base.query("SHOW lock_timeout").first?.decode(String.self, at: 0)) ?? "lock_timeout"
        let holder =
            (try? base.query(
                """
                SELECT pid, to_char(xact_start, 'YYYY-MM-DD HH24:MI:SS TZ') FROM pg_stat_activity
                WHERE pid <> pg_backend_pid() AND datname = current_database() AND application_name = \(Self.importApplicationName)
                    AND xact_start IS NOT NULL
                ORDER BY xact_start LIMIT 1
                """))?.first
        let nothing = reading ? "Nothing was read." : "Nothing was changed."
        if let holder, let pid = try? holder.decode(Int.self, at: 0),
            let start = try? holder.decode(String.self, at: 1)
        {
            error.message =
                "an import is in progress (pid \(pid), since \(start)): waited \(timeout) for the tables it "
                + (reading ? "replaces" : "writes")
            error.hint =
                reading
                ? "\(nothing) Try again when the import has finished, or wait longer for it."
                : "\(nothing) Try again when the import has finished."
        } else {
            error.message = "waited \(timeout) (lock_timeout) for a lock another transaction holds"
            error.hint = "\(nothing) Try again; pg_locks and pg_stat_activity show who holds it."
        }
        return error.remedied(.waitLonger)
    }
}

/// Where a store's connection goes, never with its password.
public struct Endpoint: Sendable, Equatable, CustomStringConvertible {
    /// The role connected as.
    public var user: String
    /// The host name, or the directory of the Unix socket.
    public var host: String
    /// The port (also the socket's file name suffix).
    public var port: String
    /// The database.
    public var database: String

    /// Whether the connection goes through a Unix socket.
    public var isUnixSocket: Bool { host.hasPrefix("/") || host.isEmpty }

    /// `user@host:port/database`; the host is the socket's directory for a Unix socket.
    public var description: String { "\(user)@\(host):\(port)/\(database)" }
}

/// The cancel handles of the sessions a command opened beside the store's own, so that Ctrl-C reaches them all.
final class SiblingSessions: @unchecked Sendable {
    private let lock = NSLock()
    private var handles: [Int: CancelHandle] = [:]
    /// Runs on the opening thread before each sibling connects (tests: a writer committing meanwhile).
    var willOpen: (@Sendable () -> Void)?
    private var nextToken = 0

    /// Adds `handle`; returns the token that removes it.
    func register(_ handle: CancelHandle) -> Int {
        lock.withLock {
            nextToken += 1
            handles[nextToken] = handle
            return nextToken
        }
    }

    /// Removes the handle registered as `token`.
    func remove(_ token: Int) {
        _ = lock.withLock { handles.removeValue(forKey: token) }
    }

    /// How many `withoutCancels` bodies are running.
    private var cleanups = 0

    /// Cancels whatever `primary` (the store's own session) and each registered session are running, unless a
    /// cleanup runs (`withoutCancels`). The lock is held across the requests, so that a cleanup starts only once
    /// none is on its way.
    func cancelAll(primary: CancelHandle) {
        lock.withLock {
            guard cleanups == 0 else { return }
            primary.cancel()
            for handle in handles.values { handle.cancel() }
        }
    }

    /// Runs `body`, the cleanup after a failure (a parallel import dropping its sessions' tables), with no cancel
    /// request sent to the store's sessions: Ctrl-C asks again and again until the command has ended, and would
    /// otherwise cancel the cleanup its first request caused. A cancel skipped meanwhile is asked again after.
    func withoutCancels<Result>(_ body: () throws -> Result) rethrows -> Result {
        lock.withLock { cleanups += 1 }
        defer { lock.withLock { cleanups -= 1 } }
        return try body()
    }
}
