import ArgumentParser
import Foundation
import Storage

/// `check`: whether the app's hand-kept copies agree; exits 3 when they do not.
struct Check: ConsoleCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check that the app's denormalized copies agree (exit 3 on violations).",
        discussion: """
            Every check is one set-based query over a read-only snapshot, so check runs with a role that may only \
            SELECT. Two maintenance runs never overlap on one database: a second check or repair fails at once. \
            Each check prints its violation count and the first Firebase paths that violate it.

            Checks:
            \(IntegrityCheck.allCases.map { "  \($0.rawValue.padding(toLength: 18)) \($0.summary)" }.joined(separator: "\n"))

            --fix runs the repairs of the failing checks (chat_duplicates has none: `chat merge` is an operator's \
            decision), then checks again, all in one transaction; with --dry-run it is rolled back.

            Exit status: 0 when every check passes, 3 when any finds a violation (after --fix: any that remains), \
            1 on error. --format json prints one object for scripts:
              {"ok": false, "checks": [{"name": "like_count", "violations": 4, "examples": ["/posts/UID/KEY"]}]}

            Examples:
              check
              check --only like_count,poster --examples 10
              check --skip chat_hash_legacy --format json
              check --fix --dry-run
              check --quiet        # cron: silent unless something is wrong
            """)

    @Option(help: ArgumentHelp("Run only these checks (comma-separated).", valueName: "name,…"))
    var only: String?

    @Option(help: ArgumentHelp("Skip these checks (comma-separated).", valueName: "name,…"))
    var skip: String?

    @Option(help: "How many example paths to show per check.")
    var examples = 5

    @Option(help: "Output format: table or json (default: the session's).")
    var format: OutputFormat?

    @Flag(help: "Run the repairs of the failing checks, then check again.")
    var fix = false

    @Flag(help: "With --fix: repair, check again, then roll back.")
    var dryRun = false

    @Flag(help: "Print only the checks that fail; nothing when all pass.")
    var quiet = false

    @OptionGroup var confirmation: Confirmation

    func validate() throws {
        guard examples >= 0 else { throw ValidationError("--examples must be 0 or more") }
        guard !dryRun || fix else { throw ValidationError("--dry-run goes with --fix (check alone never writes)") }
        _ = try selectedChecks()
    }

    func run(in session: Session) throws {
        let store = try session.store()
        let checks = try selectedChecks()
        let view = CheckReportView(quiet: quiet || session.isQuiet, format: format ?? session.format)
        let after: [CheckResult]
        if fix {
            guard dryRun || confirmation.confirm(
                "check --fix repairs what fails, rewriting rows in place (try --dry-run first). Go on?", in: session)
            else { return }
            let progress = ProgressBar("check --fix", total: nil, session: session)
            defer { progress?.finish() }
            let fixed = try store.checkAndFix(checks, examples: examples, isDryRun: dryRun) { progress?.show($0) }
            progress?.finish()
            view.print(before: fixed.before, repairs: fixed.repairs, after: fixed.after, to: session)
            after = fixed.after
        } else {
            let progress = ProgressBar("check", total: nil, session: session)
            defer { progress?.finish() }
            after = try store.check(checks, examples: examples) { check, index in
                progress?.show("\(index + 1) of \(checks.count): \(check.rawValue)")
            }
            progress?.finish()
            view.print(after, to: session)
        }
        let failing = after.filter { !$0.isClean }
        guard failing.isEmpty else {
            let total = failing.reduce(0) { $0 + $1.violations }
            throw ConsoleError(
                .violationsFound,
                "\(failing.count) of \(after.count) checks found \(DomainViews.count(total, "violation")): "
                    + failing.map(\.check.rawValue).joined(separator: ", "))
        }
    }

    private func selectedChecks() throws -> [IntegrityCheck] {
        let only = try Self.parse(only, option: "--only")
        let skipped = try Self.parse(skip, option: "--skip") ?? []
        return IntegrityCheck.allCases.filter { (only?.contains($0) ?? true) && !skipped.contains($0) }
    }

    private static func parse(_ list: String?, option: String) throws -> [IntegrityCheck]? {
        guard let list else { return nil }
        return try list.split(separator: ",").map { name in
            let name = name.trimmingCharacters(in: .whitespaces)
            guard let check = IntegrityCheck(rawValue: name) else {
                throw ValidationError(
                    "\(option): no check named \"\(name)\"; the checks are "
                        + IntegrityCheck.allCases.map(\.rawValue).joined(separator: ", "))
            }
            return check
        }
    }
}

/// Check results as a table or as the JSON contract.
struct CheckReportView {
    var quiet: Bool
    var format: OutputFormat

    /// Prints the results of a plain `check`.
    func print(_ results: [CheckResult], to session: Session) {
        if format == .json {
            session.output.line(JSONWriter.object(Self.contract(results)))
            return
        }
        let shown = quiet ? results.filter { !$0.isClean } : results
        guard !shown.isEmpty else { return }
        session.show(table(shown), as: format)
        if !quiet, format != .csv { session.output.line(summary(results)) }
    }

    /// Prints `check --fix`: what was wrong, what the repairs changed, what is left.
    func print(before: [CheckResult], repairs: [RepairReport], after: [CheckResult], to session: Session) {
        if format == .json {
            session.output.line(JSONWriter.object(Self.contract(after) + [
                ("before", JSONWriter.array(before.map(Self.json))),
                ("repairs", JSONWriter.array(repairs.map(RepairReportView.json))),
            ]))
            return
        }
        guard !repairs.isEmpty else { return print(after, to: session) }
        let failing = before.filter { !$0.isClean }
        var beforeTable = table(failing)
        beforeTable.title = "Before repairs:"
        session.show(beforeTable, as: format)
        session.output.line()
        RepairReportView(format: format).print(repairs, to: session)
        session.output.line()
        var afterTable = table(quiet ? after.filter { !$0.isClean } : after)
        afterTable.title = repairs.first?.isDryRun == true ? "After repairs (rolled back):" : "After repairs:"
        session.show(afterTable, as: format)
        if format != .csv { session.output.line(summary(after)) }
    }

    private func table(_ results: [CheckResult]) -> ResultTable {
        ResultTable(
            columns: ["check", "violations", "examples"],
            rows: results.map { [.text($0.check.rawValue), .integer($0.violations), .text($0.examples.joined(separator: " "))] })
    }

    private func summary(_ results: [CheckResult]) -> String {
        let failing = results.filter { !$0.isClean }
        guard !failing.isEmpty else { return "All \(results.count) checks passed." }
        return "\(failing.count) of \(results.count) checks found violations."
    }

    /// The stable JSON members: `ok` and `checks`.
    static func contract(_ results: [CheckResult]) -> [(String, String)] {
        [("ok", results.allSatisfy(\.isClean) ? "true" : "false"), ("checks", JSONWriter.array(results.map(json)))]
    }

    static func json(_ result: CheckResult) -> String {
        JSONWriter.object([
            ("name", JSONWriter.string(result.check.rawValue)), ("violations", String(result.violations)),
            ("examples", JSONWriter.array(result.examples.map(JSONWriter.string))),
        ])
    }
}
