import ArgumentParser
import Storage

/// `distribute`: places the store's tables on a Citus cluster.
struct Distribute: ConsoleCommand {
    static let configuration = CommandConfiguration(
        commandName: "distribute",
        abstract: "Spread the store over a Citus cluster's workers (run on the coordinator).",
        discussion: """
            Distributes each table as the plan says: users, posts, likes (by their post's owner), followers, \
            following, timeline and chats by the user's uid, all in one co-location group, so that one user's \
            rows sit on one worker; messages, and who holds each chat, by chat key; AppCoda's feed posts by post \
            id, and the lookup of posts by key beside them; unmapped values copied to every node. The rows move \
            to the workers in one transaction; migration bookkeeping and check history stay on the coordinator. \
            Tables already distributed so are left alone, so running it again is harmless.

            Needs a Citus coordinator with the citus extension in this database (and in the same database on \
            every worker) and at least one active worker. Refused on plain PostgreSQL and on a worker. `status` \
            then shows each table's placement.

            --shard-count applies to the tables that lead a group (users, messages, feed_posts); \
            the others take their group's count. Without it, Citus's citus.shard_count (32 by default).

            Examples:
              distribute
              distribute --shard-count 16
            """)

    @Option(help: "Shards per co-location group (default: the server's citus.shard_count).")
    var shardCount: Int?

    @OptionGroup var waiting: MaintenanceWaitOption

    @Option(help: "Output format (default: the session's).")
    var format: OutputFormat?

    @OptionGroup var confirmation: Confirmation

    func validate() throws {
        if let shardCount, shardCount < 1 { throw ValidationError("--shard-count must be 1 or more") }
    }

    func run(in session: Session) throws {
        let store = try session.store()
        guard
            confirmation.confirm(
                "distribute moves every table's rows to the Citus workers, in one transaction. Go on?", in: session)
        else { return }
        let tables = try store.distribute(shardCount: shardCount, wait: waiting.maintenanceWait(in: session))
        session.show(
            ResultTable(
                columns: ["table", "placement", "done"],
                rows: tables.map {
                    [.text($0.name), .text(Self.describe($0.placement)), .text($0.changed ? "now" : "already")]
                }
            ), as: format ?? session.format)
        let moved = tables.filter(\.changed).count
        session.inform(
            moved == 0
                ? "Every table was already distributed."
                : "Distributed \(DomainViews.count(moved, "table")); \(tables.count - moved) already were.")
    }

    /// "by uid, with users", "by chat_key", "reference (on every node)".
    static func describe(_ placement: TablePlacement) -> String {
        switch placement {
        case .reference: "reference (on every node)"
        case .distributed(let column, let group?): "by \(column), with \(group)"
        case .distributed(let column, nil): "by \(column)"
        }
    }
}
