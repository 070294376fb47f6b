import Foundation
import PostgresClient

extension Store {
    /// Keeps `run` in `check_runs` (migration 0009), in a transaction of its own; the server fills in the role.
    /// Needs INSERT on `check_runs` and nothing else.
    public func record(_ run: CheckRun) throws {
        try connection.execute(
            """
            INSERT INTO check_runs (run_id, started_at, finished_at, run_by, client, console_version, exit_status,
                outcome, error, checks)
            SELECT \(run.id.uuidString)::uuid, to_timestamp(\(run.startedAt.timeIntervalSince1970)),
                to_timestamp(\(run.finishedAt.timeIntervalSince1970)), current_user, \(run.client),
                \(run.version), \(run.exitStatus)::smallint, \(run.outcome.rawValue), \(run.error),
                coalesce((SELECT jsonb_agg(jsonb_build_object('check', c, 'violations', v, 'seconds', s, 'tripped', t)
                                           ORDER BY n)
                          FROM unnest(\(run.entries.map(\.check)), \(run.entries.map(\.violations)),
                                      \(run.entries.map(\.seconds)), \(run.entries.map(\.tripped)))
                              WITH ORDINALITY AS e(c, v, s, t, n)), '[]'::jsonb)
            """)
    }

    /// The recorded runs, newest first, at most `limit` of them.
    public func checkRuns(limit: Int) throws -> [CheckRun] {
        let rows = try connection.query(
            """
            SELECT run_id::text, extract(epoch FROM started_at)::float8, extract(epoch FROM finished_at)::float8,
                run_by, client, console_version, exit_status::int, outcome, error,
                ARRAY(SELECT e->>'check' FROM jsonb_array_elements(checks) WITH ORDINALITY AS x(e, n) ORDER BY n),
                ARRAY(SELECT (e->>'violations')::bigint FROM jsonb_array_elements(checks) WITH ORDINALITY AS x(e, n) ORDER BY n),
                ARRAY(SELECT (e->>'seconds')::float8 FROM jsonb_array_elements(checks) WITH ORDINALITY AS x(e, n) ORDER BY n),
                ARRAY(SELECT (e->>'tripped')::boolean FROM jsonb_array_elements(checks) WITH ORDINALITY AS x(e, n) ORDER BY n)
            FROM check_runs ORDER BY started_at DESC, run_id LIMIT \(max(limit, 0))
            """)
        return try rows.map { row in
            let names = try row.decode([String].self, at: 9)
            let counts = try row.decode([Int].self, at: 10)
            let seconds = try row.decode([Double].self, at: 11)
            let tripped = try row.decode([Bool].self, at: 12)
            guard counts.count == names.count, seconds.count == names.count, tripped.count == names.count else {
                throw StorageError(.decoding, "a check_runs row's checks lack a field")
            }
            return CheckRun(
                id: UUID(uuidString: try row.decode(String.self, at: 0)) ?? UUID(),
                startedAt: Date(timeIntervalSince1970: try row.decode(Double.self, at: 1)),
                finishedAt: Date(timeIntervalSince1970: try row.decode(Double.self, at: 2)),
                role: try row.decode(String.self, at: 3), client: try row.decode(String.self, at: 4),
                version: try row.decode(String.self, at: 5), exitStatus: try row.decode(Int.self, at: 6),
                outcome: CheckRun.Outcome(rawValue: try row.decode(String.self, at: 7)) ?? .failed,
                error: try row.decode(String?.self, at: 8),
                entries: names.indices.map {
                    CheckRun.Entry(check: names[$0], violations: counts[$0], seconds: seconds[$0], tripped: tripped[$0])
                })
        }
    }

    /// Each check's count in the last recorded run that completed and ran it (a check no such run ran is
    /// missing): what `check --fail-on new` compares with.
    public func lastRecordedCounts(of checks: [IntegrityCheck]) throws -> [IntegrityCheck: Int] {
        let rows = try connection.query(
            """
            SELECT name, (SELECT (e->>'violations')::bigint
                          FROM check_runs r, jsonb_array_elements(r.checks) e
                          WHERE r.outcome <> 'failed' AND e->>'check' = name
                          ORDER BY r.started_at DESC LIMIT 1)
            FROM unnest(\(checks.map(\.rawValue))) AS name
            """)
        var counts: [IntegrityCheck: Int] = [:]
        for row in rows {
            guard let check = IntegrityCheck(rawValue: try row.decode(String.self, at: 0)),
                let count = try row.decode(Int?.self, at: 1)
            else { continue }
            counts[check] = count
        }
        return counts
    }
}
