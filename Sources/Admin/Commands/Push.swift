import ArgumentParser
import Storage

/// `push PATH JSON`, as `firebase database:push`.
struct Push: ConsoleCommand {
    static let configuration = CommandConfiguration(
        commandName: "push",
        abstract: "Add a JSON value under a new push ID at a path and print its path (firebase database:push).",
        discussion: """
            The new key is a push ID, which sorts by creation time, as the SDKs' push() makes them; the new \
            child's path is printed, also inside a record (push /users/alice …). One transaction, with import's \
            rules (see set --help).

            Examples:
              push /messages/-NxQ3bH0Jb2Sc5HWq5nQ '{"content": "hi", "timestamp": 1700000000}'
            """)

    @Argument(help: "The Firebase path to add under.") var path: String
    @Argument(help: "The value, as JSON.") var json: String

    func validate() throws { _ = try FirebasePath.keys(of: path) }

    func run(in session: Session) throws {
        try FirebaseWrite.run(.push(json: json), at: path, emptying: nil, in: session)
    }
}
