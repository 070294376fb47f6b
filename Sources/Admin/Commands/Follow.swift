import ArgumentParser
import Storage

/// `follow A B`.
struct Follow: ConsoleCommand {
    static let configuration = CommandConfiguration(
        commandName: "follow",
        abstract: "Make A follow B, adding B's posts to A's timeline.",
        discussion: """
            Writes /following/A/B and /followers/B/A and B's posts into A's timeline, in one transaction. Following \
            twice changes nothing; following oneself is refused.

            Examples:
              follow alice bob
            """)

    @Argument(help: "The follower's uid.") var follower: String
    @Argument(help: "The uid to follow.") var followee: String

    func run(in session: Session) throws {
        let result = try session.store().follow(follower, followee)
        session.output.line(
            result.changed
                ? "\(follower) now follows \(followee); \(DomainViews.count(result.timelineEntries, "post")) added to the timeline."
                : "\(follower) already follows \(followee); nothing changed.")
    }
}
