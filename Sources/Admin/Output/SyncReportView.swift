import FirebaseTree
import Foundation
import Storage

/// The sync report: with --dry-run the differences first (as verify lists them), then a row per top-level node,
/// and a summary line on stderr; or one JSON object.
struct SyncReportView {
    var report: SyncReport
    var file: String
    /// Whether --sort was given (the report says why the source was sorted otherwise).
    var sortedFirst: Bool

    func print(to session: Session, format: OutputFormat) {
        switch format {
        case .json:
            session.output.line(json)
        case .table, .expanded, .csv:
            if report.isDryRun, !report.differences.isEmpty {
                session.show(DifferenceViews.table(report.differences, format: format), as: format)
            }
            // The table is the command's result, the summary a diagnostic (escaped: it names top-level keys), as
            // import prints them; --quiet leaves the differences of a dry run, which are data, and nothing else.
            if !report.nodes.isEmpty, !session.isQuiet { session.show(table, as: format) }
            if format != .csv { session.inform(summary) }
        }
    }

    private var table: ResultTable {
        var rows: [[Cell]] = report.nodes.map { node in
            [
                .text(node.name), .integer(node.added), .integer(node.changed), .integer(node.removed),
                .integer(node.rejected), .integer(node.rowsWritten), .integer(node.rowsDeleted),
            ]
        }
        rows.append([
            .text("total"), .integer(report.counts[.missing] ?? 0), .integer(report.counts[.changed] ?? 0),
            .integer(report.counts[.extra] ?? 0), .integer(report.rejectCount), .integer(report.rowsWritten),
            .integer(report.rowsDeleted),
        ])
        return ResultTable(
            columns: ["node", "added", "changed", "removed", "rejected", "rows written", "rows deleted"], rows: rows)
    }

    private var summary: String {
        let compared = "\(DomainViews.count(report.nodesCompared, "node")) compared"
        let timing =
            "\(DomainViews.duration(report.seconds)): comparing \(DomainViews.duration(report.comparingSeconds)), "
            + "writing \(DomainViews.duration(report.writingSeconds))"
        var text: String
        if report.rewrites == 0 {
            text =
                "The store already holds what \(file) holds: nothing written; \(compared) in "
                + "\(DomainViews.duration(report.seconds))."
        } else {
            let differences = report.differenceCount - report.rejectCount
            text =
                "\(report.isDryRun ? "Dry run: would sync" : "Synced") the store with \(file): "
                + "\(DomainViews.count(differences, "difference")), \(DomainViews.count(report.rewrites, "node")) "
                + "\(report.isDryRun ? "to rewrite or remove" : "rewritten or removed"), "
                + "\(DomainViews.count(report.rowsWritten, "row")) written and \(report.rowsDeleted) deleted; "
                + "\(compared) in \(timing)."
            if report.differences.count < report.differenceCount, report.isDryRun {
                text +=
                    " The first \(report.differences.count) differences are listed ("
                    + (report.isListCutForMemory ? "all the list's memory holds" : "--max-differences") + ")."
            }
        }
        if sortedFirst {
            text += " \(file) was sorted first (--sort)."
        } else if let reason = report.sortedBecause {
            text += " \(file) was sorted first, because \(reason)."
        }
        if report.isDryRun { text += " Rolled back; nothing was changed." }
        return text
    }

    /// The JSON contract: `dry_run`, `nodes`, `differences` (values whole, as JSON), `summary`.
    private var json: String {
        let nodes = report.nodes.map { node in
            JSONWriter.object([
                ("node", JSONWriter.string(node.name)), ("added", String(node.added)),
                ("changed", String(node.changed)), ("removed", String(node.removed)),
                ("rejected", String(node.rejected)), ("rows_written", String(node.rowsWritten)),
                ("rows_deleted", String(node.rowsDeleted)),
            ])
        }
        let summary = JSONWriter.object([
            ("nodes_compared", String(report.nodesCompared)),
            ("differences", String(report.differenceCount)),
            (
                "by_kind",
                JSONWriter.object(TreeDifference.Kind.allCases.map { ($0.rawValue, String(report.counts[$0] ?? 0)) })
            ),
            ("listed", String(report.differences.count)),
            ("nodes_rewritten", String(report.rewrites)),
            ("rows_written", String(report.rowsWritten)),
            ("rows_deleted", String(report.rowsDeleted)),
            ("rejected", String(report.rejectCount)),
            ("source_bytes", String(report.sourceBytes)),
            ("seconds", JSONWriter.seconds(report.seconds)),
            ("comparing_seconds", JSONWriter.seconds(report.comparingSeconds)),
            ("writing_seconds", JSONWriter.seconds(report.writingSeconds)),
            ("sorted_because", report.sortedBecause.map(JSONWriter.string) ?? "null"),
        ])
        return JSONWriter.object([
            ("dry_run", report.isDryRun ? "true" : "false"), ("nodes", JSONWriter.array(nodes)),
            ("differences", JSONWriter.array(DifferenceViews.json(report.differences))), ("summary", summary),
        ])
    }
}
