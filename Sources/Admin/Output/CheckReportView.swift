import Storage

/// Check results as a table or as the JSON contract.
struct CheckReportView {
    /// Only the checks that trip, without the summary: what a cron job that should mail nothing on success prints.
    var quiet: Bool
    var format: OutputFormat
    /// Whether a threshold or `--fail-on new` applies, so that the table says what each check's count means.
    var showsStatus = false

    /// Prints results that trip on any violation.
    func print(_ results: [CheckResult], to session: Session) {
        print(results, verdicts: Self.verdicts(results), to: session)
    }

    /// Prints a run: the results, or for `check --fix` what was wrong, what the repairs changed and what is left.
    func print(
        _ after: [CheckResult], verdicts: [CheckVerdict], before: [CheckResult] = [], repairs: [RepairReport] = [],
        to session: Session
    ) {
        if format == .json {
            var members = Self.contract(after, verdicts: verdicts)
            if !before.isEmpty || !repairs.isEmpty {
                members += [
                    ("before", JSONWriter.array(before.map { Self.json($0, verdict: nil) })),
                    ("repairs", JSONWriter.array(repairs.map(RepairReportView.json))),
                ]
            }
            session.output.line(JSONWriter.object(members))
            return
        }
        if !repairs.isEmpty {
            var beforeTable = table(before.filter { !$0.isClean }, verdicts: nil)
            beforeTable.title = "Before repairs:"
            session.show(beforeTable, as: format)
            session.output.line()
            RepairReportView(format: format).print(repairs, to: session)
            session.output.line()
        }
        // Quiet, only what trips: a cron job that exits 0 prints nothing, so nothing is mailed.
        let shown = zip(after, verdicts).filter { !quiet || $0.1.trips }
        guard !shown.isEmpty || !repairs.isEmpty else { return }
        var afterTable = table(shown.map(\.0), verdicts: shown.map(\.1))
        if !repairs.isEmpty {
            afterTable.title = repairs.first?.isDryRun == true ? "After repairs (rolled back):" : "After repairs:"
        }
        session.show(afterTable, as: format)
        // A run that trips ends with an error line that sums it up: said once, on stderr.
        if !quiet || !repairs.isEmpty, format != .csv, !verdicts.contains(where: \.trips) {
            session.output.line(summary(after))
        }
    }

    private func table(_ results: [CheckResult], verdicts: [CheckVerdict]?) -> ResultTable {
        let status = showsStatus ? verdicts : nil
        return ResultTable(
            columns: ["check", "violations"] + (status == nil ? [] : ["status"]) + ["examples"],
            rows: results.indices.map { index in
                let result = results[index]
                return [.text(result.check.rawValue), .integer(result.violations)]
                    + (status.map { [.text(Self.status($0[index]))] } ?? [])
                    + [.text(result.examples.joined(separator: " "))]
            })
    }

    /// The line below a run that passed (one that trips is summed up by its error line).
    private func summary(_ results: [CheckResult]) -> String {
        let failing = results.filter { !$0.isClean }
        guard !failing.isEmpty else {
            return results.count == 1 ? "The check passed." : "All \(results.count) checks passed."
        }
        return "\(failing.count) of \(results.count) checks found violations, none over its threshold."
    }

    /// What a verdict means, in a word or a few.
    static func status(_ verdict: CheckVerdict) -> String {
        switch verdict {
        case .clean: "ok"
        case .allowed(let limit): "allowed (--allow \(limit))"
        case .known(let previous): "known (was \(previous))"
        case .exceeded(let limit): limit == 0 ? "tripped" : "tripped: over --allow \(limit)"
        case .rose(let previous?): "tripped: rose from \(previous)"
        case .rose(nil): "tripped: no recorded run"
        case .baseline: "baseline (first recorded run)"
        }
    }

    /// A tripped check and why, for the error line.
    static func describe(_ check: IntegrityCheck, _ verdict: CheckVerdict) -> String {
        switch verdict {
        case .exceeded(let limit) where limit > 0: "\(check.rawValue) (over --allow \(limit))"
        case .rose(let previous?): "\(check.rawValue) (rose from \(previous))"
        default: check.rawValue
        }
    }

    /// The verdicts of the default policy: any violation trips.
    static func verdicts(_ results: [CheckResult]) -> [CheckVerdict] {
        results.map { CheckPolicy().verdict(for: $0, previous: nil) }
    }

    /// The stable JSON members: `ok` (nothing tripped: exit 0) and `checks`.
    /// `timed`: with each check's seconds (not for results that were predicted rather than run).
    static func contract(_ results: [CheckResult], verdicts: [CheckVerdict], timed: Bool = true) -> [(String, String)] {
        [
            ("ok", verdicts.contains(where: \.trips) ? "false" : "true"),
            ("checks", JSONWriter.array(zip(results, verdicts).map { json($0, verdict: $1, timed: timed) })),
        ]
    }

    static func json(_ result: CheckResult, verdict: CheckVerdict?, timed: Bool = true) -> String {
        var members = [
            ("name", JSONWriter.string(result.check.rawValue)), ("violations", String(result.violations)),
            ("examples", JSONWriter.array(result.examples.map(JSONWriter.string))),
        ]
        if timed { members.append(("seconds", JSONWriter.seconds(result.seconds))) }
        if let verdict {
            members += [("tripped", verdict.trips ? "true" : "false"), ("status", JSONWriter.string(status(verdict)))]
        }
        return JSONWriter.object(members)
    }
}
