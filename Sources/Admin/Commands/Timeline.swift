import ArgumentParser
import Storage

/// `timeline UID [--limit N] [--before KEY]`.
struct Timeline: ConsoleCommand {
    static let configuration = CommandConfiguration(
        commandName: "timeline",
        abstract: "Show a user's timeline, newest first, a page at a time.",
        discussion: """
            Each post with its poster, like count and whether UID liked it. Pages by key: pass the last key shown \
            as --before for the next page.

            Examples:
              timeline alice
              timeline alice --limit 50 --before -NxQ3bH0Jb2Sc5HWq5nQ
            """)

    @Argument(help: "The user's uid.") var uid: String
    @Option(help: "How many posts to show.") var limit = 20
    @Option(parsing: .unconditional, help: "Show posts older than this key.") var before: String?
    @Option(help: "Output format (default: the session's).") var format: OutputFormat?

    func validate() throws {
        guard limit > 0 else { throw ValidationError("--limit must be positive") }
    }

    func run(in session: Session) throws {
        let entries = try session.store().timeline(of: uid, limit: limit, before: before)
        session.show(
            DomainViews.posts(entries.map(\.post), liked: entries.map(\.isLiked)), as: format ?? session.format)
    }
}
