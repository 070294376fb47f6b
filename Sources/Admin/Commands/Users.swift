import ArgumentParser
import Storage

/// `users [--limit N] [--after UID]`.
struct Users: ConsoleCommand {
    static let configuration = CommandConfiguration(
        commandName: "users",
        abstract: "List users in uid order, a page at a time.",
        discussion: """
            Pages by key: pass the last uid shown as --after for the next page.

            Examples:
              users
              users --limit 100 --after uid00000099
            """)

    @Option(help: "How many users to list.") var limit = 20
    @Option(help: "List users after this uid.") var after: String?
    @Option(help: "Output format (default: the session's).") var format: OutputFormat?

    func validate() throws {
        guard limit > 0 else { throw ValidationError("--limit must be positive") }
    }

    func run(in session: Session) throws {
        let users = try session.store().users(limit: limit, after: after)
        session.show(DomainViews.users(users), as: format ?? session.format)
    }
}
