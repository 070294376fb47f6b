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
            holder?.isImport == true ? "an import" : holder?.isSync == true ? "a sync" : "another check or repair"
        throw StorageError(
            .server, "\(what) is running on this database\(holder.map { " (pid \($0.pid))" } ?? "")",
            sqlState: .lockNotAvailable,
            hint: "Wait for it to finish; pg_locks shows the session holding advisory lock \(key)."
        ).remedied(.waitForMaintenance)
    }

    /// Who holds the maintenance lock, as `pg_stat_activity` tells it (what a role may see of other sessions).
    func holder() throws -> LockHolder? {
        let key = UInt64(bitPattern: Self.key)
        let rows = try connection.query(
            """
            SELECT a.pid, coalesce(a.usename::text, ''), coalesce(a.application_name, ''),
                extract(epoch FROM a.xact_start)::float8
            FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid
            WHERE l.locktype = 'advisory' AND l.granted AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
                AND l.classid = \(Int64(key >> 32))::bigint::oid AND l.objid = \(Int64(key & 0xFFFF_FFFF))::bigint::oid
                AND l.objsubid = 1
            LIMIT 1
            """)
        return try rows.first.map(LockHolder.init(row:))
    }

    /// The advisory lock key that checks and repairs share ("fbadmin" in ASCII).
    static let key: Int64 = 0x66_6261_646D_696E
}
