import ArgumentParser
import Storage

/// `unlike UID POSTKEY`.
struct Unlike: ConsoleCommand {
    static let configuration = CommandConfiguration(
        abstract: "Remove a like: lowers like_count, only if the post was liked.",
        discussion: """
            Unliking a post that was not liked changes nothing; like_count never goes below 0.

            Examples:
              unlike alice -NxQ3bH0Jb2Sc5HWq5nQ
            """)

    // Push IDs begin with "-", which the parser would take for an option; see PositionalKeys.
    @Argument(parsing: .allUnrecognized, help: ArgumentHelp("The liker's uid and the post's key.", valueName: "uid post-key"))
    var keys: [String] = []

    func validate() throws { try PositionalKeys.validate(keys, names: ["UID", "POSTKEY"]) }
    private var uid: String { keys[0] }
    private var postKey: String { keys[1] }

    func run(in session: Session) throws {
        let result = try session.store().unlike(uid, post: postKey)
        session.output.line(result.changed
            ? "\(uid) no longer likes \(postKey); like_count \(result.count)."
            : "\(uid) does not like \(postKey); like_count \(result.count), nothing changed.")
    }
}
