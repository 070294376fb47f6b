import ArgumentParser
import Storage

/// `feed recent|older|newer`: AppCoda's feed.
struct Feed: ConsoleCommand {
    static let configuration = CommandConfiguration(
        commandName: "feed",
        abstract: "Page AppCoda's feed: recent, older (infinite scroll), newer (pull to refresh).",
        discussion: """
            Newest first by timestamp (milliseconds), keyset-paged: pass the last timestamp shown as --before.

            Examples:
              feed recent --limit 10
              feed older --before 1497918951912
              feed newer --after 1497918951912
            """,
        subcommands: [FeedRecent.self, FeedOlder.self, FeedNewer.self])

    func run(in session: Session) throws {
        throw ConsoleError(.usage, "feed what? recent, older or newer (see help feed)")
    }
}

/// The options every feed page takes.
struct FeedOptions: ParsableArguments {
    @Option(help: "How many posts to show.") var limit = 20
    @Option(help: "Output format (default: the session's).") var format: OutputFormat?

    func validate() throws {
        guard limit > 0 else { throw ValidationError("--limit must be positive") }
    }

    func show(_ page: Store.FeedPage, in session: Session) throws {
        let posts = try session.store().feed(page, limit: limit)
        session.show(DomainViews.feed(posts), as: format ?? session.format)
    }
}

/// `feed recent`.
struct FeedRecent: ConsoleCommand {
    static let configuration = CommandConfiguration(
        commandName: "recent", abstract: "The newest posts.",
        discussion: """
            Examples:
              feed recent
              feed recent --limit 50 --format json
            """)
    @OptionGroup var options: FeedOptions
    func run(in session: Session) throws { try options.show(.recent, in: session) }
}

/// `feed older --before TIMESTAMP [--before-id ID]`.
struct FeedOlder: ConsoleCommand {
    static let configuration = CommandConfiguration(
        commandName: "older", abstract: "Posts older than a timestamp (infinite scroll).",
        discussion: """
            With --before-id, posts at that same timestamp with a smaller id come too (an exact keyset).

            Examples:
              feed older --before 1497918951912
              feed older --before 1497918951912 --before-id -KnbF3w6cUQ-Pk1J2B4E --limit 20
            """)
    @Option(help: "A timestamp in milliseconds.") var before: Double
    @Option(
        parsing: .unconditional, help: "The id of the last post shown, to page through posts that share a timestamp.")
    var beforeId: String?
    @OptionGroup var options: FeedOptions
    func run(in session: Session) throws { try options.show(.older(than: before, id: beforeId), in: session) }
}

/// `feed newer --after TIMESTAMP`.
struct FeedNewer: ConsoleCommand {
    static let configuration = CommandConfiguration(
        commandName: "newer", abstract: "Posts newer than a timestamp (pull to refresh).",
        discussion: """
            Examples:
              feed newer --after 1497918951912
            """)
    @Option(help: "A timestamp in milliseconds.") var after: Double
    @OptionGroup var options: FeedOptions
    func run(in session: Session) throws { try options.show(.newer(than: after), in: session) }
}
