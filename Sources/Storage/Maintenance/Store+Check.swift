import Foundation
import PostgresClient

extension Store {
    /// Runs `checks` in one read-only snapshot and returns each one's violation count and first `examples` paths.
    ///
    /// Works with a role that may only SELECT. Two maintenance runs (checks or repairs) never overlap on one
    /// database: the second fails at once with `SQLState.lockNotAvailable` instead of waiting.
    ///
    /// ```swift
    /// let results = try store.check([.likeCount, .orphans], examples: 3)
    /// ```
    /// `onStart` hears of each check as it begins, with its position (from 0) among `checks`.
    public func check(
        _ checks: [IntegrityCheck] = IntegrityCheck.allCases, examples: Int = 5,
        onStart: (IntegrityCheck, _ index: Int) -> Void = { _, _ in }
    ) throws -> [CheckResult] {
        try connection.withTransaction(isolation: .repeatableRead, readOnly: true) {
            try lockMaintenance()
            return try checks.enumerated().map { index, check in
                onStart(check, index)
                return try run(check, examples: examples)
            }
        }
    }

    private func run(_ check: IntegrityCheck, examples: Int) throws -> CheckResult {
        // Materialized once, counted and sampled: the view is computed one time however many examples are asked.
        let query: Query = """
            WITH violation AS MATERIALIZED (SELECT path FROM \(identifier: check.viewName))
            SELECT (SELECT count(*) FROM violation),
                ARRAY(SELECT path FROM violation ORDER BY path LIMIT \(max(examples, 0)))
            """
        let row = try connection.query(query)[0]
        return CheckResult(check: check, violations: try row.decode(Int.self, at: 0),
                           examples: try row.decode([String].self, at: 1))
    }

    /// Takes the maintenance lock for the current transaction, or fails at once when another session holds it.
    func lockMaintenance() throws {
        let row = try connection.query("SELECT pg_try_advisory_xact_lock(\(Store.maintenanceLockKey))")[0]
        guard try row.decode(Bool.self, at: 0) else {
            throw StorageError(
                .server, "another check or repair is running on this database", sqlState: .lockNotAvailable,
                hint: "Wait for it to finish; pg_locks shows the session holding advisory lock \(Store.maintenanceLockKey).")
        }
    }

    /// The advisory lock key that checks and repairs share ("fbadmin" in ASCII).
    static let maintenanceLockKey: Int64 = 0x66_6261_646D_696E
}
