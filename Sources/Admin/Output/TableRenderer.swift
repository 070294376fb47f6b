import Foundation

/// Renders a `ResultTable` in each output format.
enum TableRenderer {
    /// The table as text in `format`, ending with a newline. Table and expanded formats are for a terminal:
    /// control characters in the data show as escapes (`TerminalText.escaped`), columns align by display width,
    /// and with `width` cells are cut with `…` to fit that many columns. JSON and CSV are data and keep every
    /// character.
    static func render(_ table: ResultTable, as format: OutputFormat, width: Int? = nil) -> String {
        switch format {
        case .table: aligned(table, width: width)
        case .expanded: expanded(table, width: width)
        case .json: JSONWriter.array(table.rows.map { jsonObject(columns: table.columns, row: $0) }) + "\n"
        case .csv: csv(table)
        }
    }

    /// The columns an aligned table of `table` takes, uncut.
    static func alignedWidth(_ table: ResultTable) -> Int {
        let widths = columnWidths(table.columns.map { TerminalText.escaped($0) }, table.rows.map { $0.map(\.shown) })
        return widths.reduce(0, +) + 3 * widths.count - 1
    }

    private static func columnWidths(_ names: [String], _ cells: [[String]]) -> [Int] {
        var widths = names.map(TerminalText.width)
        for row in cells {
            for (index, text) in row.enumerated() { widths[index] = max(widths[index], TerminalText.width(text)) }
        }
        return widths
    }

    /// Column widths within `width` columns: the widest are cut first, down to a common width.
    private static func fitted(_ widths: [Int], within width: Int) -> [Int] {
        let overhead = 3 * widths.count - 1
        guard widths.reduce(0, +) + overhead > width else { return widths }
        let budget = max(widths.count * 3, width - overhead)
        var cap = widths.max() ?? 0
        while cap > 3, widths.map({ min($0, cap) }).reduce(0, +) > budget { cap -= 1 }
        return widths.map { min($0, cap) }
    }

    /// psql's aligned format: centered headers, numbers right-aligned, `(N rows)` footer.
    static func aligned(_ table: ResultTable, width: Int? = nil) -> String {
        var names = table.columns.map { TerminalText.escaped($0) }
        var cells = table.rows.map { $0.map(\.shown) }
        var widths = columnWidths(names, cells)
        if let width {
            let fit = fitted(widths, within: width)
            if fit != widths {
                widths = fit
                names = zip(names, widths).map { TerminalText.truncated($0, toWidth: $1) }
                cells = cells.map { zip($0, widths).map { TerminalText.truncated($0, toWidth: $1) } }
            }
        }
        var lines: [String] = []
        if let title = table.title { lines.append(TerminalText.escaped(title)) }
        lines.append(
            names.enumerated().map { index, name in
                " " + centered(name, width: widths[index]) + " "
            }.joined(separator: "|").trimmingTrailingSpaces())
        lines.append(widths.map { String(repeating: "-", count: $0 + 2) }.joined(separator: "+"))
        for (rowIndex, row) in cells.enumerated() {
            lines.append(
                row.enumerated().map { index, text in
                    let padding = String(repeating: " ", count: max(0, widths[index] - TerminalText.width(text)))
                    let isNumeric = table.rows[rowIndex][index].isNumeric
                    return " " + (isNumeric ? padding + text : text + padding) + " "
                }.joined(separator: "|").trimmingTrailingSpaces())
        }
        lines.append("(\(table.rows.count) \(table.rows.count == 1 ? "row" : "rows"))")
        return lines.joined(separator: "\n") + "\n"
    }

    /// psql's expanded format: `-[ RECORD n ]` then one `name | value` line per field; with `width`, values
    /// are cut to fit.
    static func expanded(_ table: ResultTable, width: Int? = nil) -> String {
        guard !table.rows.isEmpty else { return "(0 rows)\n" }
        let names = table.columns.map { TerminalText.escaped($0) }
        let nameWidth = names.map(TerminalText.width).max() ?? 0
        var lines: [String] = []
        if let title = table.title { lines.append(TerminalText.escaped(title)) }
        for (index, row) in table.rows.enumerated() {
            lines.append("-[ RECORD \(index + 1) ]" + String(repeating: "-", count: max(0, nameWidth - 8)))
            for (name, cell) in zip(names, row) {
                var value = cell.shown
                if let width { value = TerminalText.truncated(value, toWidth: max(4, width - nameWidth - 3)) }
                lines.append((name.padding(toWidth: nameWidth) + " | " + value).trimmingTrailingSpaces())
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// RFC 4180: fields with commas, quotes or line breaks are quoted, quotes doubled.
    static func csv(_ table: ResultTable) -> String {
        ([csvLine(table.columns)] + table.rows.map { csvLine($0.map(\.display)) }).joined(separator: "\n") + "\n"
    }

    /// One CSV line of fields, without the line break.
    static func csvLine(_ fields: [String]) -> String {
        fields.map { text in
            guard text.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return text }
            return "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\""
        }.joined(separator: ",")
    }

    /// One row as a JSON object, keys in column order.
    static func jsonObject(columns: [String], row: [Cell]) -> String {
        JSONWriter.object(zip(columns, row.map(\.json)).map { ($0, $1) })
    }

    private static func centered(_ text: String, width: Int) -> String {
        let space = max(0, width - TerminalText.width(text))
        let left = space / 2
        return String(repeating: " ", count: left) + text + String(repeating: " ", count: space - left)
    }
}

extension String {
    func trimmingTrailingSpaces() -> String {
        var text = self
        while text.last == " " { text.removeLast() }
        return text
    }

    func padding(toLength length: Int) -> String {
        self + String(repeating: " ", count: max(0, length - count))
    }

    /// The text padded with spaces to `width` terminal columns.
    func padding(toWidth width: Int) -> String {
        self + String(repeating: " ", count: max(0, width - TerminalText.width(self)))
    }
}
