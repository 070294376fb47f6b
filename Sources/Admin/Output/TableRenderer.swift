/// Renders a `ResultTable` in each output format.
enum TableRenderer {
    /// The table as text in `format`, ending with a newline.
    static func render(_ table: ResultTable, as format: OutputFormat) -> String {
        switch format {
        case .table: aligned(table)
        case .expanded: expanded(table)
        case .json: JSONWriter.array(table.rows.map { jsonObject(columns: table.columns, row: $0) }) + "\n"
        case .csv: csv(table)
        }
    }

    /// psql's aligned format: centered headers, numbers right-aligned, `(N rows)` footer.
    static func aligned(_ table: ResultTable) -> String {
        let cells = table.rows.map { $0.map(\.display) }
        var widths = table.columns.map(\.count)
        for row in cells {
            for (index, text) in row.enumerated() { widths[index] = max(widths[index], text.count) }
        }
        var lines: [String] = []
        if let title = table.title { lines.append(title) }
        lines.append(table.columns.enumerated().map { index, name in
            " " + centered(name, width: widths[index]) + " "
        }.joined(separator: "|").trimmingTrailingSpaces())
        lines.append(widths.map { String(repeating: "-", count: $0 + 2) }.joined(separator: "+"))
        for (rowIndex, row) in cells.enumerated() {
            lines.append(row.enumerated().map { index, text in
                let padding = String(repeating: " ", count: widths[index] - text.count)
                let isNumeric = table.rows[rowIndex][index].isNumeric
                return " " + (isNumeric ? padding + text : text + padding) + " "
            }.joined(separator: "|").trimmingTrailingSpaces())
        }
        lines.append("(\(table.rows.count) \(table.rows.count == 1 ? "row" : "rows"))")
        return lines.joined(separator: "\n") + "\n"
    }

    /// psql's expanded format: `-[ RECORD n ]` then one `name | value` line per field.
    static func expanded(_ table: ResultTable) -> String {
        guard !table.rows.isEmpty else { return "(0 rows)\n" }
        let nameWidth = table.columns.map(\.count).max() ?? 0
        var lines: [String] = []
        if let title = table.title { lines.append(title) }
        for (index, row) in table.rows.enumerated() {
            lines.append("-[ RECORD \(index + 1) ]" + String(repeating: "-", count: max(0, nameWidth - 8)))
            for (name, cell) in zip(table.columns, row) {
                lines.append((name.padding(toLength: nameWidth) + " | " + cell.display).trimmingTrailingSpaces())
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
        let space = width - text.count
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
}
