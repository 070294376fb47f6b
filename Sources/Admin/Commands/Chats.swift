import ArgumentParser
import Storage

/// `chats UID [--limit N] [--follow]`.
struct Chats: ConsoleCommand {
    static let configuration = CommandConfiguration(
        commandName: "chats",
        abstract: "List a user's chats, most recent message first, or follow changes to them.",
        discussion: """
            With --follow, prints the user's copy of a chat each time a change to it commits (a message sent, \
            a merge), until Ctrl-C: log lines in table formats, one JSON object per line with --format json.

            Examples:
              chats alice
              chats alice --follow
              chats alice --follow --format json
            """)

    @Argument(help: "The user's uid.") var uid: String
    @Option(help: "How many chats to show.") var limit = 50
    @Flag(help: "Keep printing changes as they commit, until Ctrl-C.") var follow = false
    @Option(help: "Output format (default: the session's).") var format: OutputFormat?

    func validate() throws {
        guard limit > 0 else { throw ValidationError("--limit must be positive") }
    }

    func run(in session: Session) throws {
        let format = format ?? session.format
        guard follow else {
            let chats = try session.store().chats(of: uid, limit: limit)
            session.show(DomainViews.chats(chats), as: format)
            return
        }
        let view = FollowView<ChatChange>(
            columns: DomainViews.chatColumns, row: DomainViews.chatChangeRow, logLine: DomainViews.logLine,
            format: format)
        try view.run(try session.store().watchChats(of: uid), following: "the chats of \(uid)", in: session)
    }
}
