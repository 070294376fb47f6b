import ArgumentParser
import Storage

/// `remove PATH`, as `firebase database:remove`.
struct Remove: ConsoleCommand {
    static let configuration = CommandConfiguration(
        abstract: "Remove the node at a path and everything below it (firebase database:remove).",
        discussion: """
            One transaction. Removing the whole tree (/) asks first on a terminal.

            Examples:
              remove /users/alice
              remove /posts/alice/-NxQ3bH0Jb2Sc5HWq5nQ/caption
            """)

    @Argument(help: "The Firebase path, such as /users/alice.") var path: String
    @OptionGroup var emptying: EmptyingOptions

    func validate() throws { _ = try FirebasePath.keys(of: path) }

    func run(in session: Session) throws {
        try FirebaseWrite.run(.remove, at: path, emptying: emptying, in: session)
    }
}
