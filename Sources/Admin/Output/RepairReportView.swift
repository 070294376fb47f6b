import ArgumentParser
import Foundation
import Storage

/// Repair reports as a table of rows changed per table, or as JSON.
struct RepairReportView {
    var format: OutputFormat

    /// Prints the reports of one or more repairs.
    func print(_ reports: [RepairReport], to session: Session) {
        if format == .json {
            session.output.line(reports.count == 1 ? Self.json(reports[0]) : JSONWriter.array(reports.map(Self.json)))
            return
        }
        let rows: [[Cell]] = reports.flatMap { report in
            report.changes.map {
                [.text(report.repair.commandName), .text($0.table), .text($0.action), .integer($0.rows)]
            }
        }
        session.show(
            ResultTable(columns: ["repair", "table", "action", "rows"], rows: rows), as: format)
        guard format != .csv else { return }
        // The summary is for the operator (stderr, unless quiet); the rows above are the data.
        for report in reports {
            let took = DomainViews.duration(report.seconds)
            let rows = DomainViews.count(report.rowsChanged, "row")
            session.inform(
                report.isDryRun
                    ? "\(report.repair.commandName): dry run, would change \(rows) (\(took)); rolled back."
                    : "\(report.repair.commandName): changed \(rows) in \(took).")
        }
    }

    /// `chat merge --all`: each chat merged away and the chat that kept its messages, then the summary; JSON
    /// adds them to the report as `merged`.
    func printMerges(_ report: RepairReport, to session: Session) {
        let merges = report.mergedChats
        if format == .json {
            let merged = merges.map { merge in
                JSONWriter.object([
                    ("kept", JSONWriter.string(merge.kept)), ("dropped", JSONWriter.string(merge.dropped)),
                    ("members", JSONWriter.array(merge.members.map(JSONWriter.string))),
                    ("messages_moved", String(merge.messagesMoved)),
                ])
            }
            session.output.line(JSONWriter.object(Self.members(report) + [("merged", JSONWriter.array(merged))]))
            return
        }
        guard !merges.isEmpty else { return session.inform("No duplicate chats: nothing to merge.") }
        session.show(
            ResultTable(
                columns: ["kept", "dropped", "members", "messages moved"],
                rows: merges.map { [.text($0.kept), .text($0.dropped), .list($0.members), .integer($0.messagesMoved)] }
            ), as: format)
        guard format != .csv else { return }
        let chats = DomainViews.count(merges.count, "chat")
        let into = Set(merges.map(\.kept)).count
        let rows = DomainViews.count(report.rowsChanged, "row")
        let took = DomainViews.duration(report.seconds)
        session.inform(
            report.isDryRun
                ? "chat merge: dry run, would merge \(chats) into \(into) (\(rows)) (\(took)); rolled back."
                : "chat merge: merged \(chats) into \(into), changing \(rows), in \(took).")
    }

    /// One report as a JSON object.
    static func json(_ report: RepairReport) -> String {
        JSONWriter.object(members(report))
    }

    private static func members(_ report: RepairReport) -> [(String, String)] {
        [
            ("repair", JSONWriter.string(report.repair.commandName)), ("dry_run", report.isDryRun ? "true" : "false"),
            ("rows_changed", String(report.rowsChanged)), ("seconds", JSONWriter.seconds(report.seconds)),
            (
                "changes",
                JSONWriter.array(
                    report.changes.map { change in
                        JSONWriter.object([
                            ("table", JSONWriter.string(change.table)), ("action", JSONWriter.string(change.action)),
                            ("rows", String(change.rows)),
                        ])
                    })
            ),
        ]
    }
}

/// The options every repair command takes.
/// `--batch-size N` of the repairs that can run as a series of transactions.
struct RepairBatchOption: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "Commit in batches of about N users (by uid) or chats (by key), one transaction each.",
            discussion: """
                Instead of one transaction for the whole store: each batch is committed before the next, so that a very \
                large store is never rewritten in one long transaction. Interrupted, it leaves the batches before done; \
                run it again to finish, as it only changes what is still wrong.
                """,
            valueName: "N"))
    var batchSize: Int?

    func validate() throws {
        if let batchSize, batchSize < 1 { throw ValidationError("--batch-size must be 1 or more") }
    }
}

struct RepairRunOptions: ParsableArguments {
    @Flag(help: "Do the repair, report what it changed, then roll back.")
    var dryRun = false

    @Option(help: "Output format of the report: table or json (default: the session's).")
    var format: OutputFormat?

    @OptionGroup var waiting: MaintenanceWaitOption

    @OptionGroup var confirmation: Confirmation

    /// Runs `repair` in one transaction and prints its report; on a terminal, asks first unless it is a dry run.
    func run(_ repair: Repair, in session: Session, options: RepairOptions = RepairOptions()) throws {
        guard
            dryRun
                || confirmation.confirm(
                    "\(repair.commandName) rewrites rows in place (try --dry-run first). Go on?", in: session)
        else { return }
        var options = options
        options.isDryRun = dryRun
        options.waitSeconds = waiting.wait
        let progress = ProgressBar(repair.commandName, total: nil, session: session)
        defer { progress?.finish() }
        let report = try session.store().repair(repair, options: options) { index, count in
            progress?.show("\(options.batchSize == nil ? "statement" : "batch") \(index + 1) of \(count)")
        }
        progress?.finish()
        RepairReportView(format: format ?? session.format).print([report], to: session)
    }
}

extension Repair {
    /// The command that runs the repair; also its name in reports (`"repair"` in JSON).
    var commandName: String {
        switch self {
        case .likeCounts: "backfill like-counts"
        case .timelines: "backfill timelines"
        case .posters: "denormalize posters"
        case .chatHashes: "rehash chats"
        case .follows: "repair follows"
        case .chats: "repair chats"
        case .orphans: "repair orphans"
        case .hiddenValues: "repair hidden-values"
        case .chatMerge: "chat merge"
        }
    }
}

extension FixStep {
    /// The progress bar's words for the step.
    var description: String {
        switch self {
        case .check(let check, let index, let count, let again):
            "check \(again ? "again " : "")\(index + 1) of \(count): \(check.rawValue)"
        case .repair(let repair): repair.commandName
        }
    }
}
