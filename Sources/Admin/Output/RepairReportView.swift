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
                [.text(report.repair.commandName), .text($0.table), .text($0.action.rawValue), .integer($0.rows)]
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
                            ("table", JSONWriter.string(change.table)),
                            ("action", JSONWriter.string(change.action.rawValue)),
                            ("rows", String(change.rows)),
                        ])
                    })
            ),
        ]
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
        case .postsShape: "repair posts-shape"
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
