import ArgumentParser
import Foundation
import Storage

/// `status`: the server, the connection, the schema version and rows per table.
struct Status: ConsoleCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show the server, the connection, the schema and rows per table.",
        discussion: """
            The connection is shown without its password. Row counts are exact, taken in one snapshot.

            Examples:
              status
              status --format json
            """)

    @Option(help: "Output format (default: the session's).")
    var format: OutputFormat?

    func run(in session: Session) throws {
        let store = try session.store(requiringSchema: false)
        let status = try store.status()
        let format = format ?? session.format
        let connection = connectionDescription(status.endpoint, session: session)
        let schema = schemaDescription(status)
        let distribution = Self.describe(status.distribution) + Self.describeReads(status.readsHoldDistributedCommits)
        let leftovers = Self.describe(status.importLeftovers, isImportRunning: status.isImportRunning)
        let mirror = status.mirror.map(Self.describe)
        // In the plan's order; empty on plain PostgreSQL and before `distribute`.
        let placements = status.distribution.tables.map { (table: $0.name, placement: Self.describe($0)) }
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
                    ("distribution", JSONWriter.string(distribution)),
                    ("placements", JSONWriter.object(placements.map { ($0.table, JSONWriter.string($0.placement)) })),
                    ("tables", JSONWriter.object(tables)),
                    (
                        "import_schemas",
                        JSONWriter.array(
                            status.importLeftovers.map {
                                JSONWriter.object([("name", JSONWriter.string($0.name)), ("bytes", String($0.bytes))])
                            })
                    ),
                    ("import_running", status.isImportRunning ? "true" : "false"),
                    ("mirror", status.mirror.map(Self.json) ?? "null"),
                ]))
        case .csv:
            // One document: each setting, then each table's rows.
            let rows: [[Cell]] =
                [
                    [.text("setting"), .text("server"), .text("PostgreSQL \(status.serverVersion)")],
                    [.text("setting"), .text("connection"), .text(connection)],
                    [.text("setting"), .text("schema"), .text(schema)],
                    [.text("setting"), .text("distribution"), .text(distribution)],
                ] + (leftovers.map { [[.text("setting"), .text("import schemas"), .text($0)]] } ?? [])
                + (mirror.map { [[.text("setting"), .text("mirror"), .text($0)]] } ?? [])
                + status.tableRows.map { [.text("rows"), .text($0.table), .integer($0.rows)] }
                + placements.map { [.text("placement"), .text($0.table), .text($0.placement)] }
            session.show(ResultTable(columns: ["kind", "name", "value"], rows: rows), as: .csv)
        case .table, .expanded:
            let summary = ResultTable(
                columns: ["setting", "value"],
                rows: [
                    [.text("server"), .text("PostgreSQL \(status.serverVersion)")],
                    [.text("connection"), .text(connection)],
                    [.text("schema"), .text(schema)],
                    [.text("distribution"), .text(distribution)],
                ] + (leftovers.map { [[.text("import schemas"), .text($0)]] } ?? [])
                    + (mirror.map { [[.text("mirror"), .text($0)]] } ?? []))
            let tables =
                placements.isEmpty
                ? ResultTable(
                    columns: ["table", "rows"], rows: status.tableRows.map { [.text($0.table), .integer($0.rows)] })
                : ResultTable(
                    columns: ["table", "rows", "placement"],
                    rows: status.tableRows.map {
                        row in
                        let placement = placements.first { $0.table == row.table }?.placement
                        return [.text(row.table), .integer(row.rows), .text(placement ?? "on the coordinator")]
                    })
            session.show(summary, as: format)
            session.output.line()
            session.show(tables, as: format)
        }
    }

    /// The last mirror in a line: running (and how far behind), or how it ended.
    static func describe(_ mirror: MirrorStatus) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss"
        let applied =
            "\(DomainViews.count(mirror.eventsApplied, "event")) in "
            + DomainViews.count(mirror.transactions, "transaction")
        switch (mirror.state, mirror.isAlive) {
        case ("running", true):
            let last = mirror.lastEventAt.map {
                "the last read \(DomainViews.duration(Date().timeIntervalSince($0))) ago"
            }
            return "running since \(formatter.string(from: mirror.startedAt)) (pid \(mirror.pid)) at \(mirror.at): "
                + applied + (last.map { ", \($0)" } ?? "")
                + (mirror.secondsBehind.map { String(format: ", %.3f s behind", $0) } ?? "")
        case ("running", false):
            return "stopped without ending (its session, pid \(mirror.pid), is gone) after \(applied); last written "
                + formatter.string(from: mirror.updatedAt)
        case (let state, _):
            let how =
                switch state {
                case "ended": "the stream ended"
                case "cancelled": "the database cancelled the stream"
                case "auth_revoked": "its credential was revoked"
                default: "it failed"
                }
            return "not running: \(how) at \(formatter.string(from: mirror.updatedAt)) after \(applied)"
        }
    }

    /// The last mirror as a JSON object.
    static func json(_ mirror: MirrorStatus) -> String {
        JSONWriter.object([
            ("state", JSONWriter.string(mirror.isAlive || mirror.state != "running" ? mirror.state : "stopped")),
            ("pid", String(mirror.pid)), ("at", JSONWriter.string(mirror.at)),
            ("started_at", JSONWriter.seconds(mirror.startedAt.timeIntervalSince1970)),
            ("events_applied", String(mirror.eventsApplied)), ("transactions", String(mirror.transactions)),
            ("last_event_at", mirror.lastEventAt.map { JSONWriter.seconds($0.timeIntervalSince1970) } ?? "null"),
            ("seconds_behind", mirror.secondsBehind.map(JSONWriter.seconds) ?? "null"),
        ])
    }

    /// The schemas of parallel imports' sessions, when there are any: a running import's, or leftovers that
    /// `vacuum` drops.
    static func describe(_ leftovers: [ImportLeftover], isImportRunning: Bool) -> String? {
        guard !leftovers.isEmpty else { return nil }
        return Vacuum.describe(leftovers)
            + (isImportRunning
                ? ", loaded by the running import" : ", left by an import that never finished: vacuum drops them")
    }

    private func connectionDescription(_ endpoint: Endpoint, session: Session) -> String {
        if let directory = session.embeddedDirectory {
            return "embedded cluster in \(directory) (\(endpoint))"
        }
        return endpoint.description
    }

    /// "none (plain PostgreSQL)", or the Citus node's role, its workers and how much of the store is placed.
    static func describe(_ state: DistributionState) -> String {
        guard let version = state.citusVersion else { return "none (plain PostgreSQL)" }
        let node = "Citus \(version) coordinator with \(DomainViews.count(state.workerCount, "active worker"))"
        if state.tables.isEmpty { return node + "; the store is not distributed (see `distribute`)" }
        if !state.isDistributed {
            return node + "; \(state.tables.count) of \(Store.distributionPlan.count) tables placed (run `distribute`)"
        }
        let groups = Set(state.tables.filter { $0.column != nil }.map(\.colocationID)).count
        return node + "; distributed in \(DomainViews.count(groups, "co-location group"))"
    }

    /// Whether a distributed store's reads are one instant for this role (README, "Growing past one server").
    private static func describeReads(_ holdCommits: Bool?) -> String {
        switch holdCommits {
        case true: "; reads of one instant"
        case false:
            "; reads may see a distributed commit on one worker only (grant EXECUTE on hold_distributed_commits())"
        case nil: ""
        }
    }

    /// "by uid, group 1, 8 shards" or "reference".
    private static func describe(_ table: PlacedTable) -> String {
        table.column.map { "by \($0), group \(table.colocationID), \(table.shardCount) shards" } ?? "reference"
    }

    private func schemaDescription(_ status: StoreStatus) -> String {
        var text = "version \(status.schemaVersion)"
        if let file = status.schemaFile { text += " (\(file))" }
        text +=
            status.pendingMigrations.isEmpty
            ? ", up to date"
            : ", \(status.pendingMigrations.count) pending: " + Self.pendingRange(status.pendingMigrations)
        return text
    }

    /// The pending migrations in a cell: three by name, more as the first and the last ("0001_schema.sql …
    /// 0023_posts_shape.sql"); `migrate --list` lists them all.
    static func pendingRange(_ files: [String]) -> String {
        guard files.count > 3, let first = files.first, let last = files.last else {
            return files.joined(separator: ", ")
        }
        return "\(first) … \(last) (migrate --list names them)"
    }
}
