import ArgumentParser
import Storage

/// `update PATH JSON`, as `firebase database:update`.
struct Update: ConsoleCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write the children a JSON object names at a path, leaving the others (firebase database:update).",
        discussion: """
            Each child of the object replaces the node's child of that name; a null child removes it; children \
            the object does not name stay. One transaction, with import's rules.

            Examples:
              update /users/alice '{"username": "alice2"}'
              update /posts/alice/-NxQ3bH0Jb2Sc5HWq5nQ '{"like_count": 0, "caption": null}'
            """)

    @Argument(help: "The Firebase path, such as /users/alice.") var path: String
    @Argument(help: "A JSON object of the children to write.") var json: String
    @OptionGroup var emptying: EmptyingOptions

    func validate() throws { _ = try FirebasePath.keys(of: path) }

    func run(in session: Session) throws {
        try FirebaseWrite.run(.update(json: json), at: path, emptying: emptying, in: session)
    }
}
