import ArgumentParser
import Storage

/// `update PATH JSON`, as `firebase database:update`.
struct Update: ConsoleCommand {
    static let configuration = CommandConfiguration(
        commandName: "update",
        abstract: "Write the children a JSON object names at a path, leaving the others (firebase database:update).",
        discussion: """
            Each child of the object replaces the node's child of that name; a null child removes it; children \
            the object does not name stay. As in the SDKs' update(), a key may be a path below the node \
            ("alice/username"), keys that overlap (a and a/b) are refused, and anything but an object is refused. \
            One transaction, with import's rules (see set --help); an update that would leave the store empty \
            needs --allow-empty or --yes.

            Examples:
              update /users/alice '{"username": "alice2"}'
              update /posts/alice/-NxQ3bH0Jb2Sc5HWq5nQ '{"like_count": 0, "caption": null}'
              update / '{"users/alice/username": "al", "config/motd": "hi"}'
            """)

    @Argument(help: "The Firebase path, such as /users/alice.") var path: String
    @Argument(help: "A JSON object of the children to write.") var json: String
    @OptionGroup var emptying: EmptyingOptions

    func validate() throws { _ = try FirebasePath.keys(of: path) }

    func run(in session: Session) throws {
        try FirebaseWrite.run(.update(json: json), at: path, emptying: emptying, in: session)
    }
}
