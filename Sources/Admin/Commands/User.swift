import ArgumentParser
import Storage

/// `user add|show|rename`.
struct UserCommand: ConsoleCommand {
    static let configuration = CommandConfiguration(
        commandName: "user",
        abstract: "Add, show or rename a user.",
        discussion: """
            Examples:
              user add alice "Alice Liddell"
              user show alice
              user rename alice alice_l --propagate
            """,
        subcommands: [UserAdd.self, UserShow.self, UserRename.self])

    func run(in session: Session) throws {
        throw ConsoleError(.usage, "user what? add, show or rename (see help user)")
    }
}

/// `user add UID USERNAME`.
struct UserAdd: ConsoleCommand {
    static let configuration = CommandConfiguration(
        commandName: "add", abstract: "Create /users/UID with a username.",
        discussion: """
            The uid must be a valid Firebase key and not taken.

            Examples:
              user add alice alice
            """)

    @Argument(help: "The new user's uid.") var uid: String
    @Argument(help: "The username.") var username: String
    @Option(help: "Output format (default: the session's).") var format: OutputFormat?

    func run(in session: Session) throws {
        let user = try session.store().addUser(uid: uid, username: username)
        session.showRecord(
            [("uid", .text(user.uid)), ("username", DomainViews.cell(user.username))], as: format ?? session.format)
    }
}

/// `user show UID`.
struct UserShow: ConsoleCommand {
    static let configuration = CommandConfiguration(
        commandName: "show", abstract: "Show a user with the sizes of their lists.",
        discussion: """
            Examples:
              user show alice
              user show alice --format json
            """)

    @Argument(help: "The user's uid.") var uid: String
    @Option(help: "Output format (default: the session's).") var format: OutputFormat?

    func run(in session: Session) throws {
        guard let summary = try session.store().user(uid) else {
            throw ConsoleError(.commandFailed, "no user \(uid)")
        }
        session.showRecord(
            [
                ("uid", .text(summary.user.uid)), ("username", DomainViews.cell(summary.user.username)),
                ("posts", .integer(summary.posts)), ("followers", .integer(summary.followers)),
                ("following", .integer(summary.following)), ("timeline", .integer(summary.timelineEntries)),
            ], as: format ?? session.format)
    }
}

/// `user rename UID USERNAME [--propagate]`.
struct UserRename: ConsoleCommand {
    static let configuration = CommandConfiguration(
        commandName: "rename", abstract: "Change a user's username (--propagate: also in their posts' poster).",
        discussion: """
            Without --propagate the posts keep the old username in their poster copy, as the app left them, and \
            the poster check reports them.

            Examples:
              user rename alice alice_l --propagate
            """)

    @Argument(help: "The user's uid.") var uid: String
    @Argument(help: "The new username.") var username: String
    @Flag(help: "Also update the poster copy in each of the user's posts.") var propagate = false

    func run(in session: Session) throws {
        let posts = try session.store().renameUser(uid: uid, to: username, propagate: propagate)
        session.output.line(
            TerminalText.escaped("Renamed \(uid) to \(username)")
                + (propagate ? "; updated \(DomainViews.count(posts, "post"))." : "."))
    }
}
