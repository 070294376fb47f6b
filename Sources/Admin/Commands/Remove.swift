import ArgumentParser
import Storage

/// `remove PATH`, as `firebase database:remove`.
struct Remove: ConsoleCommand {
    static let configuration = CommandConfiguration(
        commandName: "remove",
        abstract: "Remove the node at a path and everything below it (firebase database:remove).",
        discussion: """
            One transaction. Removing a path below a leaf changes nothing, as in Firebase. Removing the whole tree \
            (/) asks first on a terminal, and a removal that leaves the store empty needs --allow-empty or --yes, \
            from a script too.

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
