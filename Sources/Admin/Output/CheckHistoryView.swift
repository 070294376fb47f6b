import Foundation
import Storage

/// `check --history`: one row per recorded run, newest first, with each check's count and its change since the
/// run before.
struct CheckHistoryView {
    var format: OutputFormat
    /// Which checks to show (`--only`/`--skip`).
    var checks: (String) -> Bool

    /// Prints `runs` (newest first); `before` is the run before the oldest listed, for its changes.
    func print(_ runs: [CheckRun], before: CheckRun?, to session: Session) {
        if runs.isEmpty, format != .json, format != .csv {
            return session.inform("No recorded runs: `check --record` keeps them.")
        }
        for run in runs where run.oddEntries > 0 {
            session.warn(
                "the run of \(run.startedAt) (\(run.id.uuidString.lowercased())) holds "
                    + "\(run.oddEntries) \(run.oddEntries == 1 ? "entry" : "entries") the console did not write; skipped"
            )
        }
        let all = runs + [before].compactMap { $0 }
        // Each run's checks' counts in the newest older run that ran them.
        let previous: [[String: Int]] = runs.indices.map { index in
            var counts: [String: Int] = [:]
            for entry in runs[index].entries {
                counts[entry.check] = all[(index + 1)...].lazy.compactMap { $0.violations(of: entry.check) }.first
            }
            return counts
        }
        if format == .json {
            session.output.line(JSONWriter.object([("runs", JSONWriter.array(zip(runs, previous).map(json)))]))
            return
        }
        let names = columns(of: runs)
        var table = ResultTable(
            columns: ["started", "seconds", "exit", "outcome", "role", "client", "version"], rows: [])
        table.columns += format == .csv ? names.flatMap { [$0, $0 + "_change"] } : names
        for (run, previous) in zip(runs, previous) {
            var row: [Cell] = [
                .text(DomainViews.time(seconds: run.startedAt.timeIntervalSince1970) ?? ""),
                .number(
                    ((run.finishedAt.timeIntervalSince1970 - run.startedAt.timeIntervalSince1970) * 1000).rounded()
                        / 1000),
                .integer(run.exitStatus),
                .text(
                    run.outcome.rawValue
                        + (run.error.map { ": " + ($0.split(separator: "\n").first.map(String.init) ?? "") } ?? "")),
                .text(run.role), .text(run.client), .text(run.version),
            ]
            for name in names {
                let count = run.violations(of: name)
                let before = previous[name]
                if format == .csv {
                    let change = count.flatMap { count in before.map { count - $0 } }
                    row += [count.map(Cell.integer) ?? .null, change.map(Cell.integer) ?? .null]
                } else {
                    row.append(
                        .text(
                            Self.cell(
                                count: count, previous: before,
                                tripped: run.entries.first { $0.check == name }?.tripped == true)))
                }
            }
            table.rows.append(row)
        }
        session.show(table, as: format)
    }

    /// A table cell: the count, its change, and `!` when it tripped the run; empty when the check did not run.
    private static func cell(count: Int?, previous: Int?, tripped: Bool) -> String {
        guard let count else { return "" }
        var text = String(count)
        if let previous, previous != count {
            text += count > previous ? " (+\(count - previous))" : " (\(count - previous))"
        }
        return tripped ? text + " !" : text
    }

    /// The checks any listed run ran, in `check`'s order, then any this console does not know.
    private func columns(of runs: [CheckRun]) -> [String] {
        let ran = Set(runs.flatMap { $0.entries.map(\.check) }).filter(checks)
        return IntegrityCheck.allCases.map(\.rawValue).filter(ran.contains)
            + ran.subtracting(IntegrityCheck.allCases.map(\.rawValue)).sorted()
    }

    private func json(_ run: CheckRun, previous: [String: Int]) -> String {
        JSONWriter.object([
            ("run_id", JSONWriter.string(run.id.uuidString.lowercased())),
            ("started_at", JSONWriter.string(DomainViews.time(seconds: run.startedAt.timeIntervalSince1970) ?? "")),
            ("finished_at", JSONWriter.string(DomainViews.time(seconds: run.finishedAt.timeIntervalSince1970) ?? "")),
            ("role", JSONWriter.string(run.role)), ("client", JSONWriter.string(run.client)),
            ("version", JSONWriter.string(run.version)), ("exit_status", String(run.exitStatus)),
            ("outcome", JSONWriter.string(run.outcome.rawValue)), ("error", run.error.map(JSONWriter.string) ?? "null"),
            (
                "checks",
                JSONWriter.array(
                    run.entries.filter { checks($0.check) }.map { entry in
                        JSONWriter.object([
                            ("name", JSONWriter.string(entry.check)), ("violations", String(entry.violations)),
                            ("change", previous[entry.check].map { String(entry.violations - $0) } ?? "null"),
                            ("seconds", JSONWriter.seconds(entry.seconds)),
                            ("tripped", entry.tripped ? "true" : "false"),
                        ])
                    })
            ),
        ])
    }
}
