import ArgumentParser
import Storage

/// `unlike UID POSTKEY`.
struct Unlike: ConsoleCommand {
    static let configuration = CommandConfiguration(
        commandName: "unlike",
        abstract: "Remove a like: lowers like_count, only if the post was liked.",
        discussion: """
            Unliking a post that was not liked changes nothing; like_count never goes below 0.

            Examples:
              unlike alice -NxQ3bH0Jb2Sc5HWq5nQ
            """)

    @Argument(help: "The liker's uid.") var uid: String
    @Argument(help: ArgumentHelp("The post's key (a push ID such as -NxQ3bH0Jb2Sc5HWq5nQ).", valueName: "post-key"))
    var postKey: String

    func run(in session: Session) throws {
        let result = try session.store().unlike(uid, post: postKey)
        session.output.line(
            result.changed
                ? "\(uid) no longer likes \(postKey); like_count \(result.likeCount)."
                : "\(uid) does not like \(postKey); like_count \(result.likeCount), nothing changed.")
    }
}
