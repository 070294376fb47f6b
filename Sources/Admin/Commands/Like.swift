import ArgumentParser
import Storage

/// `like UID POSTKEY`.
struct Like: ConsoleCommand {
    static let configuration = CommandConfiguration(
        abstract: "Like a post: adds the like and raises like_count, once.",
        discussion: """
            A second like of the same post changes nothing (the app counted it twice). Safe under concurrency: \
            like_count always equals the number of likes.

            Examples:
              like alice -NxQ3bH0Jb2Sc5HWq5nQ
            """)

    // Push IDs begin with "-", which the parser would take for an option; see PositionalKeys.
    @Argument(parsing: .allUnrecognized, help: ArgumentHelp("The liker's uid and the post's key.", valueName: "uid post-key"))
    var keys: [String] = []

    func validate() throws { try PositionalKeys.validate(keys, names: ["UID", "POSTKEY"]) }
    private var uid: String { keys[0] }
    private var postKey: String { keys[1] }

    func run(in session: Session) throws {
        let result = try session.store().like(uid, post: postKey)
        session.output.line(result.changed
            ? "\(uid) likes \(postKey); like_count \(result.count)."
            : "\(uid) already likes \(postKey); like_count \(result.count), nothing changed.")
    }
}
