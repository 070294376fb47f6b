import Foundation
internal import PostgresClient

/// The rule every read of the store follows, stated once: a read takes every lock it needs before its snapshot.
///
/// In REPEATABLE READ the snapshot is fixed by the transaction's first statement that is not a utility command,
/// and a statement that waits for a lock has taken it before it waits. TRUNCATE is not MVCC-safe: a snapshot taken
/// before a whole-tree import commits sees the tables the import truncated as empty (or as holding only the rows
/// it froze), so a read that queued behind the import and kept an older snapshot would give half a tree. A read
/// therefore:
///
/// 1. takes the maintenance lock for its session when it needs one (`check`), before its transaction begins, so
///    that waiting for a repair or an import to end leaves no snapshot behind (beside a whole-tree import that
///    loads beside the store it takes none, and reads the store as it was, as other readers do);
/// 2. begins REPEATABLE READ READ ONLY and takes `LOCK TABLE … IN ACCESS SHARE MODE` on every table of the tree
///    (a utility command, which takes no snapshot), in the order imports lock them. The lookups kept from the
///    tree are left out: whatever rewrites one (an import replacing the tree) holds the tree's tables too, and a
///    store of an older schema, which lacks them, can still be read;
/// 3. and only then runs its first query.
///
/// On Citus the workers' snapshots are taken by that `LOCK TABLE`, which Citus sends to every worker, while a
/// barrier holds distributed commits back (`ClusterSnapshot`); a read that must wait for the tables waits without
/// the barrier (whose lock the commit it waits for would wait for) and then reads again from the start.
///
/// ACCESS SHARE conflicts with ACCESS EXCLUSIVE alone: a read waits for a whole-tree import (or a root write,
/// `VACUUM FULL` of a table, a migration) and for nothing that changes rows, whose commits the snapshot sees
/// whole or not at all. A read that must wait tells `onReadWait` whom for, and gives up after `lock_timeout`.
struct Reads {
    /// The connection that reads.
    let connection: StoreConnection
    /// Taken for the session around a read that must not overlap a check, repair or import.
    let lock: MaintenanceLock
    /// Hears whom a read waits for before it waits (`Store.onReadWait`).
    let onReadWait: ((LockHolder?) -> Void)?

    /// Runs `body` as a read of one instant: before any concurrent writer or after it, never between. With
    /// `maintenance`, the maintenance lock is held for the session around it (waiting as it says), so that no
    /// check, repair or import runs meanwhile; beside a whole-tree import that loads beside the store, it reads
    /// the store as it was instead, as readers without `maintenance` do.
    ///
    /// Inside a transaction (a write reading what it is about to change, the checks of `check --fix`) `body` runs
    /// as it is: the enclosing transaction took its locks before its first read.
    func readingSnapshot<Result>(maintenance: MaintenanceWait? = nil, _ body: () throws -> Result) throws -> Result {
        if connection.isInTransaction { return try body() }
        let holdsLock = try maintenance.map { try lock.takeForReading(wait: $0) } ?? false
        defer {
            if holdsLock, connection.isConnected, !connection.isInTransaction {
                try? lock.releaseSession()
            }
        }
        let cluster = try ClusterSnapshot.ifDistributed(on: connection)
        var waits = false
        var firstRefusal: ContinuousClock.Instant?
        while true {
            var locking = false
            var locked = false
            do {
                return try connection.withTransaction(isolation: .repeatableRead, readOnly: true) {
                    // NOWAIT first: a read that must wait says whom for before it waits (which needs a query,
                    // and so a snapshot: that one is rolled back).
                    let lockTables = {
                        locking = true
                        try connection.execute(waits ? Self.readLock : Self.readLockNoWait)
                    }
                    if let cluster { try cluster.take(reachingEveryWorker: lockTables) } else { try lockTables() }
                    locked = true
                    return try body()
                }
            } catch let error as StorageError where locking && !locked && !waits && error.isLockRefusal {
                onReadWait?(try tableLockHolder())
                if let cluster {
                    // Waiting behind the barrier would deadlock with an import whose commit it holds back: wait
                    // without it, in a transaction of its own, then read again from the start.
                    try cluster.waitForTables([Self.readLock], readOnly: true, since: &firstRefusal)
                } else {
                    waits = true
                }
            }
        }
    }

    /// Takes ACCESS SHARE on the tree's tables, waiting up to `lock_timeout`.
    private static let readLock: Query = "LOCK TABLE \(Query.identifiers(TreeTable.names)) IN ACCESS SHARE MODE"
    /// `readLock`, failing at once where a lock is held against it.
    static let readLockNoWait: Query =
        "LOCK TABLE \(Query.identifiers(TreeTable.names)) IN ACCESS SHARE MODE NOWAIT"

    /// Who holds a lock on the tree's tables that keeps reads waiting (ACCESS EXCLUSIVE: an import replacing the
    /// tree, `VACUUM FULL`, a migration), or else who queued for one (an import waiting for the app's
    /// transactions, which reads then queue behind), as `pg_stat_activity` tells it; nil when it cannot be seen.
    func tableLockHolder() throws -> LockHolder? {
        let tables = TreeTable.names + TreeTable.lookupNames
        let rows = try connection.query(
            """
            SELECT a.pid, coalesce(a.usename::text, ''), coalesce(a.application_name, ''),
                extract(epoch FROM a.xact_start)::float8
            FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
            WHERE l.locktype = 'relation' AND l.mode = 'AccessExclusiveLock'
                AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
                AND l.relation = ANY (\(tables)::regclass[]) AND l.pid <> pg_backend_pid()
            ORDER BY l.granted DESC, a.xact_start LIMIT 1
            """)
        guard let row = rows.first else { return nil }
        return try LockHolder(row: row)
    }
}

/// The session holding a lock that another command waits for (or that made it fail).
public struct LockHolder: Sendable, Equatable {
    /// Its server process id.
    public var pid: Int
    /// Its role.
    public var role: String
    /// Its `application_name` (`admin` for the console).
    public var application: String
    /// When its transaction began.
    public var since: Date?

    /// Whether the holder is an import (which names itself so in `pg_stat_activity`).
    public var isImport: Bool { application == StoreConnection.importApplicationName }
    /// Whether the holder is a sync (which names itself so in `pg_stat_activity`).
    public var isSync: Bool { application == StoreConnection.syncApplicationName }
    /// Whether the holder is a mirror (which names itself so in `pg_stat_activity`).
    public var isMirror: Bool { application == StoreConnection.mirrorApplicationName }

    /// Creates a holder from its parts.
    public init(pid: Int, role: String, application: String, since: Date?) {
        self.pid = pid
        self.role = role
        self.application = application
        self.since = since
    }

    /// A holder from a row of pid, role, application name and transaction start in epoch seconds.
    init(row: StoreRow) throws {
        self.init(
            pid: try row.decode(Int.self, at: 0), role: try row.decode(String.self, at: 1),
            application: try row.decode(String.self, at: 2),
            since: try row.decode(Double?.self, at: 3).map(Date.init(timeIntervalSince1970:)))
    }
}
