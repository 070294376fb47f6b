import ArgumentParser
import Storage

/// `like UID POSTKEY`.
struct Like: ConsoleCommand {
    static let configuration = CommandConfiguration(
        commandName: "like",
        abstract: "Like a post: adds the like and raises like_count, once.",
        discussion: """
            A second like of the same post changes nothing (the app counted it twice). Safe under concurrency: \
            like_count always equals the number of likes.

            Examples:
              like alice -NxQ3bH0Jb2Sc5HWq5nQ
            """)

    @Argument(help: "The liker's uid.") var uid: String
    @Argument(help: ArgumentHelp("The post's key (a push ID such as -NxQ3bH0Jb2Sc5HWq5nQ).", valueName: "post-key"))
    var postKey: String

    func run(in session: Session) throws {
        let result = try session.store().like(uid, post: postKey)
        session.output.line(
            result.changed
                ? "\(uid) likes \(postKey); like_count \(result.likeCount)."
                : "\(uid) already likes \(postKey); like_count \(result.likeCount), nothing changed.")
    }
}
