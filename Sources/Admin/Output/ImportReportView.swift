import Foundation
import Storage

/// The import report as a table (pgloader's summary) on stdout and a summary line on stderr, or one JSON object.
struct ImportReportView {
    var report: ImportReport
    var file: String

    func print(to session: Session, format: OutputFormat) {
        switch format {
        case .json:
            session.output.line(json)
        case .table, .expanded, .csv:
            // The table is the command's result (psql's command tag), the summary a diagnostic beside it: a pipe
            // reads only the table, and --quiet leaves neither (a cron job's import prints nothing).
            if !session.isQuiet { session.show(table, as: format) }
            if format != .csv { session.inform(summary) }
        }
    }

    private var table: ResultTable {
        var rows: [[Cell]] = []
        for node in report.nodes {
            let lines = report.lines.filter { $0.node == node.name }
            for (index, line) in lines.enumerated() {
                let isFirst = index == 0
                rows.append([
                    .text(node.name), .text(line.table), .integer(line.rowsRead), .integer(line.rowsImported),
                    isFirst ? .integer(node.rejected) : .null, .integer(line.bytes),
                    isFirst ? .text(Self.seconds(node.seconds)) : .null,
                ])
            }
            if lines.isEmpty {
                rows.append([
                    .text(node.name), .null, .integer(0), .integer(0), .integer(node.rejected), .integer(0),
                    .text(Self.seconds(node.seconds)),
                ])
            }
        }
        // pgloader's summary likewise times its index builds below the tables.
        for step in report.finishing {
            let target =
                switch step.target {
                case ImportReport.Finishing.indexes: "\(step.count) \(step.count == 1 ? "index" : "indexes")"
                case ImportReport.Finishing.statistics: "statistics, \(step.count) tables"
                default: step.target
                }
            rows.append([
                .text("(after reading)"), .text(target), .null, .null, .null, .null, .text(Self.seconds(step.seconds)),
            ])
        }
        rows.append([
            .text("total"), .null, .integer(report.lines.reduce(0) { $0 + $1.rowsRead }), .integer(report.rowsImported),
            .integer(report.rejectCount), .integer(report.lines.reduce(0) { $0 + $1.bytes }),
            .text(Self.seconds(report.seconds)),
        ])
        return ResultTable(
            columns: ["node", "table", "rows read", "imported", "rejected", "copy bytes", "seconds"], rows: rows)
    }

    private var summary: String {
        let megabytes = Double(report.inputBytes) / 1_000_000
        let rate = report.seconds > 0 ? Double(report.rowsImported) / report.seconds : 0
        var text =
            "\(report.isDryRun ? "Dry run: would import" : "Imported") \(DomainViews.count(report.rowsImported, "row")) from "
            + "\(file) (\(String(format: "%.1f", megabytes)) MB) in \(DomainViews.duration(report.seconds)): "
            + "\(String(format: "%.1f", report.bytesPerSecond / 1_000_000)) MB/s, \(Int(rate)) rows/s."
        if report.mode == .merge {
            text +=
                " Merged: \(DomainViews.count(report.rowsReplaced, "row")) of the store's nodes of the same names "
                + (report.rowsReplaced == 1 ? "was" : "were") + " replaced."
        }
        if report.isDryRun { text += " Rolled back; nothing was changed." }
        if let reason = report.readersLockedOut {
            text += " Readers waited for the whole import: the tables could not be switched in (\(reason))."
        }
        return text
    }

    private var json: String {
        let lines = report.lines.map { line in
            JSONWriter.object([
                ("node", JSONWriter.string(line.node)), ("table", JSONWriter.string(line.table)),
                ("rows_read", String(line.rowsRead)), ("rows_imported", String(line.rowsImported)),
                ("copy_bytes", String(line.bytes)),
            ])
        }
        let nodes = report.nodes.map { node in
            JSONWriter.object([
                ("node", JSONWriter.string(node.name)), ("input_bytes", String(node.inputBytes)),
                ("seconds", JSONWriter.seconds(node.seconds)), ("rejected", String(node.rejected)),
            ])
        }
        let finishing = report.finishing.map { step in
            JSONWriter.object([
                ("target", JSONWriter.string(step.target)), ("count", String(step.count)),
                ("seconds", JSONWriter.seconds(step.seconds)),
            ])
        }
        let rejects = report.rejects.map { reject in
            JSONWriter.object([("path", JSONWriter.string(reject.path)), ("reason", JSONWriter.string(reject.reason))])
        }
        return JSONWriter.object([
            ("file", JSONWriter.string(file)), ("mode", JSONWriter.string(report.mode.rawValue)),
            ("dry_run", report.isDryRun ? "true" : "false"), ("input_bytes", String(report.inputBytes)),
            ("seconds", JSONWriter.seconds(report.seconds)), ("rows_imported", String(report.rowsImported)),
            ("rows_replaced", String(report.rowsReplaced)), ("tables", JSONWriter.array(lines)),
            ("nodes", JSONWriter.array(nodes)), ("after_reading", JSONWriter.array(finishing)),
            ("rejected", String(report.rejectCount)), ("rejects", JSONWriter.array(rejects)),
            ("warnings", String(report.warningCount)),
            ("readers_locked_out", report.readersLockedOut.map(JSONWriter.string) ?? "null"),
            ("sessions", String(report.sessions)),
        ])
    }

    static func seconds(_ value: Double) -> String {
        String(format: "%.3f", value)
    }
}
