import Foundation
internal import PostgresClient

/// The PostgreSQL store of the app's Firebase tree: the domain operations and the maintenance work run
/// through it, each in one transaction.
///
/// ```swift
/// let store = try Store(conninfo: url)
/// let status = try store.status()
/// ```
public final class Store {
    /// The connection every operation runs on; only Storage sends SQL.
    let connection: StoreConnection

    /// Hears, before a read starts to wait for the tables a writer holds (an import replacing the tree), who
    /// holds them (nil when that cannot be seen); the read then waits up to `lock_timeout`. A console sets it to
    /// say so on a terminal.
    public var onReadWait: ((LockHolder?) -> Void)?

    // The features, each built with what it uses; the public methods forward to them.

    /// The copies every write keeps in step with /posts and /chats, on this store's connection.
    var copies: DerivedCopies { DerivedCopies(connection: connection) }
    /// The advisory lock checks, repairs, imports and `distribute` share.
    var maintenance: MaintenanceLock { MaintenanceLock(connection: connection) }
    /// Reads of one instant.
    var reads: Reads { Reads(connection: connection, lock: maintenance, onReadWait: onReadWait) }
    /// Where the tree's rows lie at a path.
    var treeRows: TreeRows { TreeRows(connection: connection) }
    /// Citus.
    var distribution: Distribution { Distribution(connection: connection, maintenance: maintenance) }
    /// The app's operations.
    var app: AppOperations {
        AppOperations(connection: connection, copies: copies, reads: reads, distribution: distribution)
    }
    /// Export and `get`.
    var export: TreeExport { TreeExport(connection: connection, reads: reads, treeRows: treeRows) }
    /// `verify`.
    var verification: Verification { Verification(export: export) }
    /// Import and the write verbs.
    var imports: TreeImport {
        TreeImport(
            connection: connection, copies: copies, maintenance: maintenance, distribution: distribution,
            export: export, treeRows: treeRows)
    }
    /// `sync`.
    var syncing: TreeSync {
        TreeSync(
            connection: connection, copies: copies, maintenance: maintenance, verification: verification,
            treeRows: treeRows, distribution: distribution)
    }
    /// The integrity checks and their history.
    var checking: Checks { Checks(connection: connection, reads: reads, distribution: distribution) }
    /// Repairs, `check --fix` and chat merges.
    var repairs: Repairs {
        Repairs(
            connection: connection, copies: copies, maintenance: maintenance, treeRows: treeRows,
            checking: checking, distribution: distribution, restorePosts: { [imports] in try imports.restorePosts($0) })
    }
    /// VACUUM.
    var accounts: Accounts { Accounts(connection: connection) }
    var vacuuming: Vacuum { Vacuum(connection: connection, distribution: distribution, maintenance: maintenance) }

    /// A store on an open connection (tests hand it theirs; the console connects by conninfo).
    init(connection: Connection) {
        self.connection = StoreConnection(connection)
    }

    /// Connects from a libpq conninfo string or `postgresql://` URI, libpq's environment (PGHOST, PGUSER,
    /// ~/.pgpass …) filling in what it leaves out, as psql does; an empty string means the environment only.
    /// `parameters` override the string's settings (the embedded cluster passes its socket this way).
    public convenience init(conninfo: String, parameters: [(String, String)] = []) throws {
        self.init(
            connection: try StorageError.converting { try Connection(conninfo: conninfo, parameters: parameters) })
    }

    /// The settings a conninfo string or URI spells out (`host`, `password`, …), without connecting; nil when
    /// it does not parse.
    public static func settings(ofConninfo conninfo: String) -> [String: String]? {
        ConnectionOptions.parse(conninfo)
    }

    /// Where the store's connection goes, without any password.
    public var endpoint: Endpoint { connection.endpoint }

    /// Whether the connection is still usable, as far as can be known without a round trip.
    public var isConnected: Bool { connection.isConnected }

    /// A function that cancels whatever the store is running, safe to call from another thread (Ctrl-C).
    public func makeCanceller() -> (@Sendable () -> Void)? {
        guard let handle = connection.makeCancelHandle() else { return nil }
        let siblings = connection.siblings
        return { siblings.cancelAll(primary: handle) }
    }

    /// Runs `body`, what a command does after a failure (record it, drop what it left), with the cancel requests of
    /// `makeCanceller` held off until it returns: Ctrl-C's are sent again and again until the command ends, and
    /// would otherwise cancel the cleanup too.
    public func withoutCancels<Result>(_ body: () throws -> Result) rethrows -> Result {
        try connection.withoutCancels(body)
    }

    /// Where the schema stands against `migrator`'s migrations; throws `.migration` when they disagree, and
    /// `.distribution` on a Citus worker.
    public func migrationState() throws -> MigrationState {
        try migrationState(Migrator())
    }

    /// Where the schema stands against other migrations than this binary's (tests).
    func migrationState(_ migrator: Migrator) throws -> MigrationState {
        let state = try migrator.state(on: connection)
        // A worker has none of the coordinator's bookkeeping: without this, it would look like an empty database.
        if state.applied.isEmpty { try distribution.refuseWorker() }
        return state
    }

    /// Applies every pending migration of this binary's (`sql/`), each in its own transaction; returns those it
    /// applied.
    @discardableResult
    public func migrate() throws -> [Migration] {
        try migrate(Migrator())
    }

    /// Applies other migrations than this binary's (tests): the only way to run SQL of one's own is not public.
    @discardableResult
    func migrate(_ migrator: Migrator) throws -> [Migration] {
        _ = try migrationState(migrator)
        return try migrator.migrate(on: connection)
    }

    /// How long a statement waits for a lock before it fails (`lock_timeout`) for this connection; nil waits
    /// as long as it takes. An import, which waits for the app's transactions to end, overrides it.
    public func setLockTimeout(_ timeout: Duration?) throws {
        try connection.setLockTimeout(timeout)
    }
}
