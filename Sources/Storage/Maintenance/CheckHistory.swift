import Foundation
internal import PostgresClient

extension Checks {
    /// `Store.record`: see there.
    func record(_ run: CheckRun) throws {
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

    /// `Store.checkRuns`: see there.
    func checkRuns(limit: Int) throws -> [CheckRun] {
        let rows = try connection.query(
            """
            SELECT run_id::text, extract(epoch FROM started_at)::float8, extract(epoch FROM finished_at)::float8,
                run_by, client, console_version, exit_status::int, outcome, error,
                ARRAY(SELECT e::text FROM jsonb_array_elements(checks) WITH ORDINALITY AS x(e, n) ORDER BY n)
            FROM check_runs ORDER BY started_at DESC, run_id LIMIT \(max(limit, 0))
            """)
        return try rows.map { row in
            let (entries, odd) = CheckRun.entries(ofRecorded: try row.decode([String].self, at: 9))
            var run = CheckRun(
                id: UUID(uuidString: try row.decode(String.self, at: 0)) ?? UUID(),
                startedAt: Date(timeIntervalSince1970: try row.decode(Double.self, at: 1)),
                finishedAt: Date(timeIntervalSince1970: try row.decode(Double.self, at: 2)),
                role: try row.decode(String.self, at: 3), client: try row.decode(String.self, at: 4),
                version: try row.decode(String.self, at: 5), exitStatus: try row.decode(Int.self, at: 6),
                outcome: CheckRun.Outcome(rawValue: try row.decode(String.self, at: 7)) ?? .failed,
                error: try row.decode(String?.self, at: 8), entries: entries)
            run.oddEntries = odd
            return run
        }
    }

    /// `Store.lastRecordedCounts`: see there.
    func lastRecordedCounts(of checks: [IntegrityCheck]) throws -> [IntegrityCheck: Int] {
        let rows = try connection.query(
            """
            SELECT name, (SELECT trunc((e->'violations')::numeric)::bigint
                          FROM check_runs r, jsonb_array_elements(r.checks) e
                          -- A count written by hand as text or out of range is skipped, never cast.
                          WHERE r.outcome IN ('passed', 'violations') AND jsonb_typeof(e) = 'object'
                              AND e->>'check' = name
                              AND CASE WHEN jsonb_typeof(e->'violations') = 'number'
                                  THEN (e->'violations')::numeric BETWEEN 0 AND 9e18 ELSE false END
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

extension CheckRun {
    /// The well-formed entries of a recorded `checks` array, element by element as JSON
    /// (`{"check", "violations", "seconds", "tripped"}`), and how many others it holds.
    package static func entries(ofRecorded elements: [String]) -> ([CheckRun.Entry], odd: Int) {
        var entries: [CheckRun.Entry] = []
        for element in elements {
            guard case .object(let fields)? = try? TreeValue.parse(json: element, normalizing: false),
                case .string(let check)? = fields["check"], case .number(let violations)? = fields["violations"],
                violations >= 0, violations < 9e18, violations == violations.rounded(),
                case .number(let seconds)? = fields["seconds"], case .bool(let tripped)? = fields["tripped"]
            else { continue }
            entries.append(
                CheckRun.Entry(check: check, violations: Int(violations), seconds: seconds, tripped: tripped))
        }
        return (entries, elements.count - entries.count)
    }
}
