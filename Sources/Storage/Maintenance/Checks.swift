import Foundation
internal import PostgresClient

/// The integrity checks: each counts and samples the paths where the hand-kept copies disagree, in one
/// read-only snapshot; and their recorded history (`check_runs`).
struct Checks {
    /// The connection that reads.
    let connection: StoreConnection
    /// The snapshot every run reads in.
    let reads: Reads
    /// Whether the tables are on Citus, which runs the checks' twin views.
    let distribution: Distribution

    /// `Store.check`: see there.
    func check(
        _ checks: [IntegrityCheck] = IntegrityCheck.allCases, examples: Int = 5, wait: MaintenanceWait = .none,
        onStart: (IntegrityCheck, _ index: Int) -> Void = { _, _ in },
        onResult: (CheckResult) -> Void = { _ in }
    ) throws -> [CheckResult] {
        try reads.readingSnapshot(maintenance: wait) {
            let isDistributed = try distribution.isDistributed()
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
}
