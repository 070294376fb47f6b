import ArgumentParser
import Storage

/// `status`: the server, the connection, the schema version and rows per table.
struct Status: ConsoleCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show the server, the connection, the schema and rows per table.",
        discussion: """
            The connection is shown without its password. Row counts are exact, taken in one snapshot.

            Examples:
              status
              status --format json
            """)

    @Option(help: "Output format: table, expanded, json or csv (default: the session's).")
    var format: OutputFormat?

    func run(in session: Session) throws {
        let store = try session.store(requiringSchema: false)
        let status = try store.status()
        let format = format ?? session.format
        let connection = connectionDescription(status.endpoint, session: session)
        let schema = schemaDescription(status)
        switch format {
        case .json:
            let tables = status.tableRows.map { ($0.table, String($0.rows)) }
            session.output.line(
                JSONWriter.object([
                    ("server_version", JSONWriter.string(status.serverVersion)),
                    ("connection", JSONWriter.string(connection)),
                    ("embedded", session.embeddedDirectory == nil ? "false" : "true"),
                    ("schema_version", String(status.schemaVersion)),
                    ("pending_migrations", JSONWriter.array(status.pendingMigrations.map(JSONWriter.string))),
                    ("tables", JSONWriter.object(tables)),
                ]))
        case .csv:
            // One document: each setting, then each table's rows.
            let rows: [[Cell]] =
                [
                    [.text("setting"), .text("server"), .text("PostgreSQL \(status.serverVersion)")],
                    [.text("setting"), .text("connection"), .text(connection)],
                    [.text("setting"), .text("schema"), .text(schema)],
                ] + status.tableRows.map { [.text("rows"), .text($0.table), .integer($0.rows)] }
            session.show(ResultTable(columns: ["kind", "name", "value"], rows: rows), as: .csv)
        case .table, .expanded:
            let summary = ResultTable(
                columns: ["setting", "value"],
                rows: [
                    [.text("server"), .text("PostgreSQL \(status.serverVersion)")],
                    [.text("connection"), .text(connection)],
                    [.text("schema"), .text(schema)],
                ])
            let tables = ResultTable(
                columns: ["table", "rows"], rows: status.tableRows.map { [.text($0.table), .integer($0.rows)] })
            session.show(summary, as: format)
            session.output.line()
            session.show(tables, as: format)
        }
    }

    private func connectionDescription(_ endpoint: Endpoint, session: Session) -> String {
        if let directory = session.embeddedDirectory {
            return "embedded cluster in \(directory) (\(endpoint))"
        }
        return endpoint.description
    }

    private func schemaDescription(_ status: StoreStatus) -> String {
        var text = "version \(status.schemaVersion)"
        if let file = status.schemaFile { text += " (\(file))" }
        text +=
            status.pendingMigrations.isEmpty
            ? ", up to date"
            : ", \(status.pendingMigrations.count) pending: " + status.pendingMigrations.joined(separator: ", ")
        return text
    }
}
