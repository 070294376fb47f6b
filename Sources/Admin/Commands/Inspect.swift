import ArgumentParser
import Foundation
import Storage

/// `inspect FILE`: what an import of a Firebase export would load, read without a database (`pg_restore -l`).
struct Inspect: ConsoleCommand {
    static let configuration = CommandConfiguration(
        commandName: "inspect",
        abstract: "List what a Firebase export holds and an import would load, without a database (pg_restore -l).",
        discussion: """
            Reads FILE (a file, a .gz file, or - for stdin) as import reads it, every rule and mapping included, \
            and stores nothing: no database is needed. A row per top-level node and table: the node's bytes of \
            JSON, the rows it would load into the table, and the values import would reject (with their first \
            paths below). Values beyond --max-rejects are counted, never a failure: inspect is for finding them. \
            Malformed JSON fails with the place, as import's does (exit 1).

            Examples:
              inspect export.json.gz
              inspect export.json --format json
              gunzip -c backup.json.gz | admin inspect -
            """)

    @Argument(help: "The Firebase export to read: a file, a .gz file, or - for stdin.", completion: .file())
    var file: String

    @Option(help: "List the first N rejected values (all are counted).")
    var examples = 5

    @Option(help: "Output format (default: the session's).")
    var format: OutputFormat?

    func validate() throws {
        guard examples >= 0 else { throw ValidationError("--examples must be 0 or more") }
    }

    func run(in session: Session) throws {
        let input = try InputFile(path: file)
        defer { input.close() }
        let progress = ProgressBar("inspect", total: input.size, session: session)
        defer { progress?.finish() }
        var listed: [ImportReject] = []
        let report = try ImportMapping.validate(
            try input.source(progress: progress), options: ImportOptions(maximumRejects: .max)
        ) { reject in
            if listed.count < examples { listed.append(reject.cut(to: 200)) }
        }
        progress?.finish()
        let format = format ?? session.format
        if format == .json {
            session.output.line(Self.json(report, listed: listed))
            return
        }
        session.show(Self.table(report), as: format)
        for reject in listed { session.warn("would reject \(reject.path): \(reject.reason): \(reject.value)") }
        let megabytes = String(format: "%.1f", Double(report.inputBytes) / 1_000_000)
        session.inform(
            "\(file) (\(megabytes) MB): an import would load \(DomainViews.count(report.rowsImported, "row"))"
                + " and reject \(DomainViews.count(report.rejectCount, "value")); nothing was written.")
    }

    /// A row per node and table, in the order the nodes come in the file.
    static func table(_ report: ImportReport) -> ResultTable {
        var rows: [[Cell]] = []
        for node in report.nodes {
            let lines = report.lines.filter { $0.node == node.name }
            for (index, line) in lines.enumerated() {
                rows.append([
                    .text(node.name), index == 0 ? .integer(node.inputBytes) : .null, .text(line.table),
                    .integer(line.rowsImported), index == 0 ? .integer(node.rejected) : .null,
                ])
            }
            if lines.isEmpty {
                rows.append([.text(node.name), .integer(node.inputBytes), .null, .integer(0), .integer(node.rejected)])
            }
        }
        rows.append([
            .text("total"), .integer(report.inputBytes), .null, .integer(report.rowsImported),
            .integer(report.rejectCount),
        ])
        return ResultTable(columns: ["node", "json bytes", "table", "rows", "rejected"], rows: rows)
    }

    /// `{"nodes": [{"node", "json_bytes", "rejected", "tables": {"users": 241}}], "rows", "rejected",
    /// "input_bytes", "rejects": [{"path", "reason", "value"}]}`.
    static func json(_ report: ImportReport, listed: [ImportReject]) -> String {
        let nodes = report.nodes.map { node in
            let tables = report.lines.filter { $0.node == node.name }.map { ($0.table, String($0.rowsImported)) }
            return JSONWriter.object([
                ("node", JSONWriter.string(node.name)), ("json_bytes", String(node.inputBytes)),
                ("rejected", String(node.rejected)), ("tables", JSONWriter.object(tables)),
            ])
        }
        let rejects = listed.map { reject in
            JSONWriter.object([
                ("path", JSONWriter.string(reject.path)), ("reason", JSONWriter.string(reject.reason)),
                ("value", JSONWriter.string(reject.value)),
            ])
        }
        return JSONWriter.object([
            ("nodes", JSONWriter.array(nodes)), ("rows", String(report.rowsImported)),
            ("rejected", String(report.rejectCount)), ("input_bytes", String(report.inputBytes)),
            ("rejects", JSONWriter.array(rejects)),
        ])
    }
}
