import Foundation

extension Session {
    /// Prints a table in `format` (default: the session's) the way the operator's terminal takes it: fitted to
    /// its width (cells cut with `…`), as records when `\x auto` is on and rows would not fit, and through the
    /// pager when longer than the screen. Files, pipes and scripts get every byte, unpaged.
    func show(_ table: ResultTable, as format: OutputFormat? = nil) {
        var format = format ?? self.format
        let terminal = output.isTerminal ? TerminalText.size(of: STDOUT_FILENO) : nil
        if format == .table, expandedMode == .auto, let terminal, TableRenderer.alignedWidth(table) > terminal.columns {
            format = .expanded
        }
        let isLaidOut = format == .table || format == .expanded
        page(TableRenderer.render(table, as: format, width: isLaidOut ? terminal?.columns : nil))
    }

    /// Prints one record: a JSON object, a `field | value` table, or one row of CSV or expanded output.
    func showRecord(_ fields: [(String, Cell)], as format: OutputFormat? = nil) {
        switch format ?? self.format {
        case .json: output.line(JSONWriter.object(fields.map { ($0.0, $0.1.json) }))
        case .table:
            show(ResultTable(columns: ["field", "value"], rows: fields.map { [.text($0.0), $0.1] }), as: .table)
        case let other: show(ResultTable(columns: fields.map(\.0), rows: [fields.map(\.1)]), as: other)
        }
    }

    /// Writes `text` to stdout, through the pager when it is longer than the terminal and one is configured
    /// (`ADMIN_PAGER`, else `PAGER`, else `less -FRSX`; empty turns it off, as does `\pset pager off`).
    func page(_ text: String) {
        guard let stream = pagedStream() else { return output.write(text) }
        output.flush()
        // The pager shows what it is given on the terminal: escaped as TextOutput escapes it.
        let bytes = Array(TerminalText.escaped(text, keepingNewlines: true).utf8)
        // A reader that quits early closes the pipe (EPIPE): the rest is not wanted.
        try? bytes.withUnsafeBufferPointer { try stream.write($0) }
        try? stream.finish()
    }

    /// A stream to the operator's terminal that pages once it runs longer than the screen; nil when nothing is
    /// paged: a script, `\o FILE`, a pipe, `\pset pager off`, an empty `PAGER`.
    func pagedStream() -> PagedStream? {
        guard usesPager, isInteractive, output.isTerminal, let terminal = TerminalText.size(of: STDOUT_FILENO),
            let command = Pager.command()
        else { return nil }
        return PagedStream(rows: terminal.rows, command: command)
    }
}

/// psql's `\x`: records instead of columns always, never, or when the columns would not fit the terminal.
enum ExpandedMode: String, CaseIterable {
    case off, on, auto
}
