import Foundation
internal import PostgresClient

extension Store {
    /// Runs `checks` in one read-only snapshot and returns each one's violation count, first `examples` paths and
    /// duration.
    ///
    /// Works with a role that may only SELECT. Two maintenance runs (checks or repairs) never overlap on one
    /// database: the second fails with `SQLState.lockNotAvailable`, at once or after `wait`.
    ///
    /// ```swift
    /// let results = try store.check([.likeCount, .orphans], examples: 3)
    /// ```
    /// `onStart` hears of each check as it begins, with its position (from 0) among `checks`; `onResult` of each
    /// result as it is known (so that a run that fails half-way can still say what it found).
    public func check(
        _ checks: [IntegrityCheck] = IntegrityCheck.allCases, examples: Int = 5, wait: MaintenanceWait = .none,
        onStart: (IntegrityCheck, _ index: Int) -> Void = { _, _ in },
        onResult: (CheckResult) -> Void = { _ in }
    ) throws -> [CheckResult] {
        try readingSnapshot(maintenance: wait) {
            let isDistributed = try isDistributed()
            return try checks.enumerated().map { index, check in
                onStart(check, index)
                let result = try run(check, examples: examples, isDistributed: isDistributed)
                onResult(result)
                return result
            }
        }
    }

    private func run(_ check: IntegrityCheck, examples: Int, isDistributed: Bool) throws -> CheckResult {
        let started = ContinuousClock.now
        // Materialized once, counted and sampled: the view is computed one time however many examples are asked.
        let query: Query = """
            WITH violation AS MATERIALIZED (SELECT path FROM \(identifier: check.viewName(isDistributed: isDistributed)))
            SELECT (SELECT count(*) FROM violation),
                ARRAY(SELECT path FROM violation ORDER BY path LIMIT \(max(examples, 0)))
            """
        let row = try connection.query(query)[0]
        return CheckResult(
            check: check, violations: try row.decode(Int.self, at: 0),
            examples: try row.decode([String].self, at: 1),
            seconds: (ContinuousClock.now - started).seconds)
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
    func lockMaintenance(wait: MaintenanceWait = .none, scope: LockScope = .transaction) throws {
        let key = Store.maintenanceLockKey
        let tryLock: Query =
            switch scope {
            case .transaction: "SELECT pg_try_advisory_xact_lock(\(key))"
            case .session: "SELECT pg_try_advisory_lock(\(key))"
            }
        if try connection.query(tryLock)[0].decode(Bool.self, at: 0) { return }
        if wait.seconds > 0 {
            wait.onWait(try maintenanceLockHolder())
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
                    "SELECT set_config('lock_timeout', \(Self.lockTimeoutSetting(milliseconds: wait.seconds * 1000)), true)"
                )
                do {
                    try connection.execute(lock)
                } catch let error as StorageError where error.sqlState == .lockNotAvailable {
                    throw StorageError(
                        .server,
                        "another check, repair or import still held the maintenance lock after \(wait.seconds) s",
                        sqlState: .lockNotAvailable,
                        hint: "Nothing was changed. pg_locks shows the session holding advisory lock \(key).")
                }
                try connection.execute("SELECT set_config('lock_timeout', \(previous), true)")
            }
            return
        }
        let holder = try maintenanceLockHolder()
        let what = holder?.isImport == true ? "an import" : "another check or repair"
        throw StorageError(
            .server, "\(what) is running on this database\(holder.map { " (pid \($0.pid))" } ?? "")",
            sqlState: .lockNotAvailable,
            hint: "Wait for it to finish; pg_locks shows the session holding advisory lock \(key)."
        ).remedied(.waitForMaintenance)
    }

    /// `lock_timeout`'s value for a wait of `milliseconds`: whole milliseconds, rounded up, at most the setting's
    /// largest (about 24.8 days; a longer wait is as good as forever for a lock).
    static func lockTimeoutSetting(milliseconds: Double) -> String {
        "\(Int(min(milliseconds.rounded(.up), Double(Int32.max))))ms"
    }

    /// Who holds the maintenance lock, as `pg_stat_activity` tells it (what a role may see of other sessions).
    private func maintenanceLockHolder() throws -> LockHolder? {
        let key = UInt64(bitPattern: Store.maintenanceLockKey)
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
    static let maintenanceLockKey: Int64 = 0x66_6261_646D_696E
}

/// How long a maintenance run waits for another to finish before it gives up.
public struct MaintenanceWait {
    /// Seconds to wait; 0 fails at once.
    public var seconds: Double
    /// Hears who holds the lock (nil when the holder cannot be seen) before the wait begins.
    public var onWait: (LockHolder?) -> Void

    /// Waits up to `seconds`, telling `onWait` whom for.
    public init(seconds: Double, onWait: @escaping (LockHolder?) -> Void = { _ in }) {
        self.seconds = seconds
        self.onWait = onWait
    }

    /// Fail at once.
    public static var none: MaintenanceWait { MaintenanceWait(seconds: 0) }
}
