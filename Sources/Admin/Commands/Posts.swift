import ArgumentParser
import Storage

/// `posts UID [--limit N] [--before KEY]`.
struct Posts: ConsoleCommand {
    static let configuration = CommandConfiguration(
        commandName: "posts",
        abstract: "List a user's posts, newest first, a page at a time.",
        discussion: """
            Pages by key: pass the last key shown as --before for the next page.

            Examples:
              posts alice
              posts alice --limit 50 --before -NxQ3bH0Jb2Sc5HWq5nQ
            """)

    @Argument(help: "The owner's uid.") var uid: String
    @Option(help: "How many posts to list.") var limit = 20
    @Option(parsing: .unconditional, help: "List posts older than this key.") var before: String?
    @Option(help: "Output format (default: the session's).") var format: OutputFormat?

    func validate() throws {
        guard limit > 0 else { throw ValidationError("--limit must be positive") }
    }

    func run(in session: Session) throws {
        let posts = try session.store().posts(of: uid, limit: limit, before: before)
        session.show(DomainViews.posts(posts), as: format ?? session.format)
    }
}
