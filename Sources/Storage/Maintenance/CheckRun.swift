import Foundation

/// One run of the checks as `check --record` keeps it in `check_runs` (migration 0009).
public struct CheckRun: Sendable, Equatable {
    /// How a run ended.
    public enum Outcome: String, Sendable, CaseIterable {
        /// Every check passed, or found no more than its threshold lets pass.
        case passed
        /// A check tripped.
        case violations
        /// The run stopped half-way (an error, a lost connection, an interrupt).
        case failed
    }

    /// One check's result within a run.
    public struct Entry: Sendable, Equatable {
        /// The check's name; kept as text, since a later console may no longer know the check.
        public var check: String
        /// How many violations it found.
        public var violations: Int
        /// How long it took.
        public var seconds: Double
        /// Whether it failed the run.
        public var tripped: Bool

        /// An entry from its parts.
        public init(check: String, violations: Int, seconds: Double, tripped: Bool) {
            self.check = check
            self.violations = violations
            self.seconds = seconds
            self.tripped = tripped
        }
    }

    /// The run's id.
    public var id: UUID
    /// When the run began.
    public var startedAt: Date
    /// When it ended.
    public var finishedAt: Date
    /// The database role that ran it (filled in by the server when recorded).
    public var role: String
    /// Who ran the console and where: `user@host`.
    public var client: String
    /// The console's version.
    public var version: String
    /// The console's exit status for the run.
    public var exitStatus: Int
    /// How the run ended.
    public var outcome: Outcome
    /// Why a failed run failed.
    public var error: String?
    /// The checks' results, in the order they ran (for a failed run, those that finished).
    public var entries: [Entry]
    /// Entries of the recorded row that the console did not write as it does (a count that is no count, a
    /// field missing), left out of `entries`.
    public var oddEntries = 0

    /// A run from its parts; `role` is what the server says when the run is recorded.
    public init(
        id: UUID = UUID(), startedAt: Date, finishedAt: Date, role: String = "", client: String, version: String,
        exitStatus: Int, outcome: Outcome, error: String? = nil, entries: [Entry]
    ) {
        self.id = id
        self.startedAt = startedAt
        self.finishedAt = finishedAt
        self.role = role
        self.client = client
        self.version = version
        self.exitStatus = exitStatus
        self.outcome = outcome
        self.error = error
        self.entries = entries
    }

    /// The violations `check` found in this run, if it ran.
    public func violations(of check: String) -> Int? {
        entries.first { $0.check == check }?.violations
    }
}

/// When violations fail a run: thresholds per check, and whether only a rise since the last recorded run counts.
public struct CheckPolicy: Sendable, Equatable {
    /// What makes a check with violations trip.
    public enum FailOn: String, Sendable, CaseIterable {
        /// Any violation beyond the check's threshold.
        case any
        /// Only a count higher than in the last recorded run (a backlog being worked down stays quiet).
        case new
    }

    /// Violations each check may have and still pass.
    public var allowed: [IntegrityCheck: Int]
    /// What makes a check trip.
    public var failOn: FailOn

    /// With `.new`, whether this run is recorded and so is the baseline for a check no recorded run counted:
    /// its violations pass, and later runs are held to its count (a first cron run does not mail the whole
    /// backlog). Unrecorded, such a check's violations all count as new.
    public var recordsBaseline: Bool

    /// A policy; the default trips on any violation.
    public init(allowed: [IntegrityCheck: Int] = [:], failOn: FailOn = .any, recordsBaseline: Bool = false) {
        self.allowed = allowed
        self.failOn = failOn
        self.recordsBaseline = recordsBaseline
    }

    /// What the policy says of `result`; `previous` is the count of the last recorded run that ran the check
    /// (nil when none did), which only `.new` consults.
    public func verdict(for result: CheckResult, previous: Int?) -> CheckVerdict {
        if result.isClean { return .clean }
        if let limit = allowed[result.check], result.violations <= limit { return .allowed(limit: limit) }
        guard failOn == .new else { return .exceeded(limit: allowed[result.check] ?? 0) }
        if let previous, result.violations <= previous { return .known(previous: previous) }
        if previous == nil, recordsBaseline { return .baseline }
        return .rose(from: previous)
    }
}

/// Whether a check's violations fail the run, and why.
public enum CheckVerdict: Sendable, Equatable {
    /// No violation.
    case clean
    /// Violations within the check's threshold (`--allow CHECK=limit`).
    case allowed(limit: Int)
    /// With `--fail-on new`: no more violations than the last recorded run had.
    case known(previous: Int)
    /// More violations than the threshold (0 when none was given).
    case exceeded(limit: Int)
    /// With `--fail-on new`: more violations than the last recorded run had (nil: no run recorded it).
    case rose(from: Int?)
    /// With `--fail-on new --record` and no recorded run of the check: this run's count is the baseline.
    case baseline

    /// Whether the check fails the run.
    public var trips: Bool {
        switch self {
        case .clean, .allowed, .known, .baseline: false
        case .exceeded, .rose: true
        }
    }
}
