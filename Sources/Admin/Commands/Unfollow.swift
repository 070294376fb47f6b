import ArgumentParser
import Storage

/// `unfollow A B`.
struct Unfollow: ConsoleCommand {
    static let configuration = CommandConfiguration(
        commandName: "unfollow",
        abstract: "Make A stop following B, removing B's posts from A's timeline.",
        discussion: """
            Removes /following/A/B, /followers/B/A and B's posts from A's timeline, in one transaction. Unfollowing \
            someone not followed changes nothing.

            Examples:
              unfollow alice bob
            """)

    @Argument(help: "The follower's uid.") var follower: String
    @Argument(help: "The uid to unfollow.") var followee: String

    func run(in session: Session) throws {
        let result = try session.store().unfollow(follower, followee)
        session.output.line(
            result.changed
                ? "\(follower) no longer follows \(followee); \(DomainViews.count(result.timelineEntries, "post")) removed from the timeline."
                : "\(follower) does not follow \(followee); nothing changed.")
    }
}
