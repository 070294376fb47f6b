internal import PostgresClient

/// The advisory lock that checks, repairs, imports and `distribute` share, so that no two of them run on one
/// database at once; reads that must not overlap one take it for their session.
struct MaintenanceLock {
    /// The connection that takes it.
    let connection: StoreConnection

    /// Takes the lock for the transaction, waiting as long as it takes (an import queues behind a check).
    func takeWaiting() throws {
        try connection.execute("SELECT pg_advisory_xact_lock(\(Self.key))")
    }

    /// Says, for the current transaction, that the maintenance lock's holder is a whole-tree import that loads
    /// beside the store: readers keep reading the store as it was until it switches, and so may a check
    /// (`takeForReading`).
    func welcomeReaders() throws {
        try connection.execute("SELECT pg_advisory_xact_lock_shared(\(Self.readersWelcomeKey))")
    }

    /// Takes the lock for a read's session (`check`), as `take` does; but when its holder is a whole-tree import
    /// that loads beside the store (`welcomeReaders`), takes nothing, tells `wait.onReadBeside` and returns false:
    /// the read then reads the store as it was, as every other reader does, without waiting for the import.
    func takeForReading(wait: MaintenanceWait) throws -> Bool {
        if try connection.query("SELECT pg_try_advisory_lock(\(Self.key))")[0].decode(Bool.self, at: 0) { return true }
        let welcomed = try !connection.query(
            """
            SELECT 1 FROM pg_locks l WHERE \(Self.isGranted(Self.readersWelcomeKey))
            LIMIT 1
            """
        ).isEmpty
        guard welcomed else {
            try take(wait: wait, scope: .session)
            return true
        }
        wait.onReadBeside(try holder())
        return false
    }

    /// Releases the lock taken for the session (`LockScope.session`).
    func releaseSession() throws {
        try connection.execute("SELECT pg_advisory_unlock(\(Self.key))")
    }

    /// How long a maintenance lock is held.
    enum LockScope {
        /// Until the current transaction ends (repairs, imports).
        case transaction
        /// Until `pg_advisory_unlock`, taken outside any transaction: a read's, whose snapshot must come after the
        /// wait (see `readingSnapshot`).
        case session
    }

    /// Takes the maintenance lock. When another session holds it: fails at once, or (with a `wait`) tells
    /// `wait.onWait` who holds it and waits up to `wait.seconds` for it.
    func take(wait: MaintenanceWait = .none, scope: LockScope = .transaction) throws {
        let key = Self.key
        let tryLock: Query =
            switch scope {
            case .transaction: "SELECT pg_try_advisory_xact_lock(\(key))"
            case .session: "SELECT pg_try_advisory_lock(\(key))"
            }
        if try connection.query(tryLock)[0].decode(Bool.self, at: 0) { return }
        if wait.seconds > 0 {
            wait.onWait(try holder())
            let lock: Query =
                switch scope {
                case .transaction: "SELECT pg_advisory_xact_lock(\(key))"
                case .session: "SELECT pg_advisory_lock(\(key))"
                }
            // lock_timeout bounds the wait, for this statement only: the session's own setting comes back after
            // (a savepoint inside a transaction, whose release would keep the local setting).
            try connection.withTransaction {
                let previous = try connection.query("SELECT current_setting('lock_timeout')")[0].decode(
                    String.self, at: 0)
                try connection.execute(
                    "SELECT set_config('lock_timeout', \(StoreConnection.lockTimeoutSetting(milliseconds: wait.seconds * 1000)), true)"
                )
                do {
                    try connection.execute(lock)
                } catch let error as StorageError where error.sqlState == .lockNotAvailable {
                    throw StorageError(
                        .server,
                        "another check, repair, import or sync still held the maintenance lock after \(wait.seconds) s",
                        sqlState: .lockNotAvailable,
                        hint: "Nothing was changed. pg_locks shows the session holding advisory lock \(key).")
                }
                try connection.execute("SELECT set_config('lock_timeout', \(previous), true)")
            }
            return
        }
        let holder = try holder()
        let what =
            holder?.isImport == true
            ? "an import"
            : holder?.isSync == true ? "a sync" : holder?.isMirror == true ? "a mirror" : "another check or repair"
        throw StorageError(
            .server, "\(what) is running on this database\(holder.map { " (pid \($0.pid))" } ?? "")",
            sqlState: .lockNotAvailable,
            hint: "Wait for it to finish; pg_locks shows the session holding advisory lock \(key)."
        ).remedied(.waitForMaintenance)
    }

    /// Who holds the maintenance lock, as `pg_stat_activity` tells it (what a role may see of other sessions).
    func holder() throws -> LockHolder? {
        let rows = try connection.query(
            """
            SELECT a.pid, coalesce(a.usename::text, ''), coalesce(a.application_name, ''),
                extract(epoch FROM a.xact_start)::float8
            FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid
            WHERE \(Self.isGranted(Self.key))
            LIMIT 1
            """)
        return try rows.first.map(LockHolder.init(row:))
    }

    /// The advisory lock key that checks and repairs share ("fbadmin" in ASCII).
    static let key: Int64 = 0x66_6261_646D_696E
    /// The advisory lock key a whole-tree import that readers may read beside holds shared ("fbadmrd").
    static let readersWelcomeKey: Int64 = 0x66_6261_646D_7264

    /// The condition that the `pg_locks` row `l` is the bigint advisory lock `key` of this database, granted.
    private static func isGranted(_ key: Int64) -> Query {
        let bits = UInt64(bitPattern: key)
        return """
            l.locktype = 'advisory' AND l.granted
                AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
                AND l.classid = \(Int64(bits >> 32))::bigint::oid AND l.objid = \(Int64(bits & 0xFFFF_FFFF))::bigint::oid
                AND l.objsubid = 1
            """
    }
}

/// How long a maintenance run waits for another to finish before it gives up.
public struct MaintenanceWait {
    /// Seconds to wait; 0 fails at once.
    public var seconds: Double
    /// Hears who holds the lock (nil when the holder cannot be seen) before the wait begins.
    public var onWait: (LockHolder?) -> Void
    /// Hears that a check reads beside a whole-tree import instead of waiting (its holder, nil when it cannot be
    /// seen): the check reads the store as it was before the import.
    public var onReadBeside: (LockHolder?) -> Void

    /// Waits up to `seconds`, telling `onWait` whom for, or `onReadBeside` whom a check reads beside.
    public init(
        seconds: Double, onWait: @escaping (LockHolder?) -> Void = { _ in },
        onReadBeside: @escaping (LockHolder?) -> Void = { _ in }
    ) {
        self.seconds = seconds
        self.onWait = onWait
        self.onReadBeside = onReadBeside
    }

    /// Fail at once.
    public static var none: MaintenanceWait { MaintenanceWait(seconds: 0) }
}
