import ArgumentParser
import Foundation
import Storage

extension CheckPolicy.FailOn: ExpressibleByArgument {}

/// `check`: whether the app's hand-kept copies agree; exits 3 when they do not. Runs unattended: history,
/// thresholds, a metrics file and a wait for other maintenance.
struct Check: ConsoleCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Check that the app's denormalized copies agree (exit 3 on violations).",
        usage: """
            admin check [--only <name,…>] [--skip <name,…>] [--examples <n>] [--format <format>] [--quiet]
                        [--fix [--dry-run] [--yes]] [--record] [--allow <check=N> …] [--fail-on any|new]
                        [--metrics-file <path> [--metrics-label <name=value> …]] [--wait <seconds>]
            admin check --history [--limit <n>] [--only <name,…>] [--skip <name,…>] [--format <format>]
            """,
        discussion: """
            Every check is one set-based query over a read-only snapshot, so check runs with a role that may only \
            SELECT. Two maintenance runs (checks, repairs, whole-tree imports) never overlap on one database: a \
            second one fails at once, or with --wait queues behind the first for up to that many seconds and then \
            checks the store as the first left it (behind an import, the imported store; behind --fix, the \
            repaired one). A whole-tree import that loads beside the store (see import --help) is the exception: \
            during it, check reads the store as it was before the import, at once, as export and get do. Each check prints its violation count and the first Firebase paths that violate it.

            Checks:
            \(IntegrityCheck.allCases.map { "  \($0.rawValue.padding(toLength: 18)) \($0.summary)" }.joined(separator: "\n"))

            --fix runs the repairs of the failing checks (chat_duplicates has none: `chat merge` is an operator's \
            decision), then checks again, all in one transaction that holds the tree against writes (the app's \
            writes wait for it); with --dry-run it is rolled back.

            Unattended runs (cron): --record keeps the run in the table check_runs (start and end, role, client, \
            version, each check's count and seconds, exit status; a run that fails half-way is kept as failed); \
            that is the only write, and needs INSERT on check_runs alone. --history lists the recorded runs, \
            newest first, with each check's change since the run before. --allow CHECK=N lets up to N violations \
            of that check pass; --fail-on new fails only on a check whose count rose since the last recorded run \
            (a backlog being worked down stays quiet). --metrics-file writes Prometheus metrics for \
            node_exporter's textfile collector, also when the run cannot connect or fails (admin_check_up 0).

            Exit status: 0 when every check passes (or stays within --allow / --fail-on new), 3 when any trips \
            (after --fix: any that remains), 2 when the database cannot be reached, 1 on any other error. \
            --format json prints one object for scripts:
              {"ok": false, "checks": [{"name": "like_count", "violations": 4, "examples": ["/posts/UID/KEY"],
                "seconds": 0.012, "tripped": true, "status": "tripped: over --allow 3"}]}

            Examples:
              check
              check --only like_count,poster --examples 10
              check --skip chat_hash_legacy --format json
              check --fix --dry-run
              check --quiet        # cron: silent unless something is wrong
              check --record --fail-on new --wait 600 --metrics-file /var/lib/node_exporter/admin_check.prom
              check --allow like_count=20 --allow orphans=5
              check --history --limit 10
            """)

    @Option(
        help: ArgumentHelp("Run only these checks (comma-separated).", valueName: "name,…"),
        completion: .list(IntegrityCheck.allCases.map(\.rawValue)))
    var only: String?

    @Option(
        help: ArgumentHelp("Skip these checks (comma-separated).", valueName: "name,…"),
        completion: .list(IntegrityCheck.allCases.map(\.rawValue)))
    var skip: String?

    @Option(help: "How many example paths to show per check.")
    var examples = 5

    @Option(help: "Output format (default: the session's).")
    var format: OutputFormat?

    @Flag(help: "Run the repairs of the failing checks, then check again.")
    var fix = false

    @Flag(help: "With --fix: repair, check again, then roll back.")
    var dryRun = false

    @Flag(help: "Print only the checks that trip the run; nothing when it exits 0.")
    var quiet = false

    @Flag(help: "Keep this run in the database's check history (table check_runs).")
    var record = false

    @Flag(help: "List the recorded runs, newest first, instead of checking.")
    var history = false

    @Option(help: "With --history: how many runs to list.")
    var limit = 20

    @Option(help: ArgumentHelp("Let up to N violations of CHECK pass (repeatable).", valueName: "check=N"))
    var allow: [String] = []

    @Option(
        help: ArgumentHelp(
            "Fail on any violation, or only on counts that rose since the last recorded run.",
            valueName: "any|new"))
    var failOn: CheckPolicy.FailOn = .any

    @Option(
        help: ArgumentHelp(
            "Write Prometheus metrics to this file (atomically), whatever the outcome.",
            valueName: "path"), completion: .file())
    var metricsFile: String?

    @Option(
        help: ArgumentHelp(
            "Add this label to every metric (repeatable), e.g. database=app.",
            valueName: "name=value"))
    var metricsLabel: [String] = []

    @OptionGroup var waiting: MaintenanceWaitOption

    @OptionGroup var confirmation: Confirmation

    func validate() throws {
        guard examples >= 0 else { throw ValidationError("--examples must be 0 or more") }
        guard !dryRun || fix else { throw ValidationError("--dry-run goes with --fix (check alone never writes)") }
        guard !(dryRun && record) else { throw ValidationError("--record keeps real runs; a --dry-run is rolled back") }
        guard limit >= 1 else { throw ValidationError("--limit must be 1 or more") }
        if history {
            let running = [
                ("--fix", fix), ("--record", record), ("--allow", !allow.isEmpty), ("--fail-on", failOn != .any),
                ("--metrics-file", metricsFile != nil),
            ].filter(\.1).map(\.0)
            guard running.isEmpty else {
                throw ValidationError("--history lists past runs; \(running.joined(separator: ", ")) go with a run")
            }
        }
        _ = try selectedChecks()
        _ = try policy()
        _ = try labels()
    }

    /// `--metrics-label`s as (name, value), names as Prometheus allows them.
    private func labels() throws -> [(String, String)] {
        guard metricsFile != nil || metricsLabel.isEmpty else {
            throw ValidationError("--metrics-label goes with --metrics-file")
        }
        var seen: Set<String> = []
        return try metricsLabel.map { item in
            let parts = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
            let name = parts[0]
            func isNameCharacter(_ character: Character) -> Bool {
                character == "_" || (character.isASCII && (character.isLetter || character.isNumber))
            }
            guard parts.count == 2, let first = name.first, !first.isNumber, name.allSatisfy(isNameCharacter),
                !name.hasPrefix("__"), name != "check"
            else {
                throw ValidationError(
                    "--metrics-label takes NAME=VALUE with a Prometheus label name other than check, not \"\(item)\"")
            }
            guard seen.insert(name).inserted else {
                // {env="a",env="b"} is no valid sample: Prometheus would drop the whole file.
                throw ValidationError("--metrics-label \(name) is given twice; a label name can have one value")
            }
            return (parts[0], parts[1])
        }
    }

    func run(in session: Session) throws {
        if history { return try showHistory(in: session) }
        let checks = try selectedChecks()
        let policy = try policy()
        let started = Date()
        var finished: [CheckResult] = []
        var recorded = false
        // The run as it ends now, for the history and the metrics file.
        func finishedRun(
            _ status: ExitStatus, outcome: CheckRun.Outcome, error: String? = nil, entries: [CheckRun.Entry]
        ) -> CheckRun {
            CheckRun(
                startedAt: started, finishedAt: Date(), client: Self.client, version: AdminMain.version,
                exitStatus: Int(status.rawValue), outcome: outcome, error: error, entries: entries)
        }
        var metricsAttempted = false
        do {
            let store = try session.store()
            let previous = policy.failOn == .new ? try store.lastRecordedCounts(of: checks) : [:]
            if policy.failOn == .new, previous.isEmpty, !quiet {
                session.inform(
                    record
                        ? "No recorded run to compare with: this run's counts are the baseline later runs are held to."
                        : "No recorded run to compare with: every violation counts as new (--record keeps a baseline).")
            }
            guard let results = try runChecks(checks, on: store, in: session, finished: &finished) else { return }
            let verdicts = results.after.map { policy.verdict(for: $0, previous: previous[$0.check]) }
            let view = CheckReportView(
                quiet: quiet || session.isQuiet, format: format ?? session.format,
                showsStatus: policy.failOn != .any || !policy.allowed.isEmpty)
            view.print(results.after, verdicts: verdicts, before: results.before, repairs: results.repairs, to: session)
            let tripped = zip(results.after, verdicts).filter { $0.1.trips }
            let status: ExitStatus = tripped.isEmpty ? .success : .violationsFound
            let run = finishedRun(
                status, outcome: tripped.isEmpty ? .passed : .violations,
                entries: zip(results.after, verdicts).map { Self.entry($0, tripped: $1.trips) })
            if record {
                try store.record(run)
                recorded = true
            }
            if let metricsFile {
                // Written once: failing here is the run's failure, not a reason to try the file again.
                metricsAttempted = true
                try CheckMetrics(run: run, isUp: true, labels: labels()).write(to: metricsFile)
            }
            guard tripped.isEmpty else {
                let total = tripped.reduce(0) { $0 + $1.0.violations }
                throw ConsoleError(
                    .violationsFound,
                    "\(tripped.count) of \(results.after.count) checks found \(DomainViews.count(total, "violation")): "
                        + tripped.map { CheckReportView.describe($0.0.check, $0.1) }.joined(separator: ", "))
            }
        } catch let error as ConsoleError where error.status == .violationsFound {
            throw error
        } catch {
            let failure = ConsoleError.from(error)
            let run = finishedRun(
                failure.status, outcome: .failed, error: failure.message,
                entries: finished.map { Self.entry($0, tripped: false) })
            // A run already recorded (the metrics file failed after) is not recorded twice.
            if record, !recorded, let store = session.connectedStore {
                do { try store.withoutCancels { try store.record(run) } } catch {
                    session.warn("the failed run could not be recorded: \(ConsoleError.from(error).message)")
                }
            }
            if let metricsFile, !metricsAttempted {
                do { try CheckMetrics(run: run, isUp: false, labels: labels()).write(to: metricsFile) } catch {
                    session.warn("\(metricsFile) could not be written: \(ConsoleError.from(error).message)")
                }
            }
            throw failure
        }
    }

    /// What a plain check or a `--fix` found; nil when `--fix` was not confirmed.
    private func runChecks(
        _ checks: [IntegrityCheck], on store: Store, in session: Session, finished: inout [CheckResult]
    ) throws -> (before: [CheckResult], repairs: [RepairReport], after: [CheckResult])? {
        let wait = waiting.maintenanceWait(in: session)
        if fix {
            guard
                dryRun
                    || confirmation.confirm(
                        "check --fix repairs what fails, rewriting rows in place (try --dry-run first). Go on?",
                        in: session)
            else { return nil }
            let progress = ProgressBar("check --fix", total: nil, session: session)
            defer { progress?.finish() }
            return try store.checkAndFix(checks, examples: examples, isDryRun: dryRun, wait: wait) {
                progress?.show($0.description)
            }
        }
        let progress = ProgressBar("check", total: nil, session: session)
        defer { progress?.finish() }
        let after = try store.check(checks, examples: examples, wait: wait) { check, index in
            progress?.show("\(index + 1) of \(checks.count): \(check.rawValue)")
        } onResult: {
            finished.append($0)
        }
        return ([], [], after)
    }

    private func showHistory(in session: Session) throws {
        let runs = try session.store().checkRuns(limit: limit + 1)
        let selected = Set(try selectedChecks().map(\.rawValue))
        CheckHistoryView(format: format ?? session.format, checks: { selected.contains($0) })
            .print(Array(runs.prefix(limit)), before: runs.count > limit ? runs.last : nil, to: session)
    }

    private static func entry(_ result: CheckResult, tripped: Bool) -> CheckRun.Entry {
        CheckRun.Entry(
            check: result.check.rawValue, violations: result.violations, seconds: result.seconds,
            tripped: tripped)
    }

    /// `user@host` of this process, for the history.
    private static var client: String {
        let user =
            ProcessInfo.processInfo.environment["USER"].flatMap { $0.isEmpty ? nil : $0 }
            ?? getpwuid(geteuid()).map { String(cString: $0.pointee.pw_name) } ?? String(geteuid())
        var name = [CChar](repeating: 0, count: 256)
        let host =
            gethostname(&name, name.count) == 0
            ? String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : "localhost"
        return user + "@" + host
    }

    private func selectedChecks() throws -> [IntegrityCheck] {
        let only = try Self.parse(only, option: "--only")
        let skipped = try Self.parse(skip, option: "--skip") ?? []
        return IntegrityCheck.allCases.filter { (only?.contains($0) ?? true) && !skipped.contains($0) }
    }

    private func policy() throws -> CheckPolicy {
        var allowed: [IntegrityCheck: Int] = [:]
        for item in allow {
            let parts = item.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2, let limit = Int(parts[1].trimmingCharacters(in: .whitespaces)), limit >= 0 else {
                throw ValidationError("--allow takes CHECK=N with N 0 or more, not \"\(item)\"")
            }
            guard let check = try Self.parse(parts[0], option: "--allow")?.first else { continue }
            allowed[check] = limit
        }
        return CheckPolicy(allowed: allowed, failOn: failOn, recordsBaseline: record)
    }

    private static func parse(_ list: String?, option: String) throws -> [IntegrityCheck]? {
        guard let list else { return nil }
        return try list.split(separator: ",").map { name in
            let name = name.trimmingCharacters(in: .whitespaces)
            guard let check = IntegrityCheck(rawValue: name) else {
                let names = IntegrityCheck.allCases.map(\.rawValue)
                let suggestion = Dispatcher.suggestion(for: name, among: names)
                throw ValidationError(
                    "\(option): no check named \"\(name)\"\(suggestion)\(suggestion.isEmpty ? "; the" : " The") checks are "
                        + names.joined(separator: ", "))
            }
            return check
        }
    }
}
