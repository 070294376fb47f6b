import ArgumentParser
import Storage

/// `messages CHATKEY [--limit N] [--before KEY] [--follow]`.
struct Messages: ConsoleCommand {
    static let configuration = CommandConfiguration(
        commandName: "messages",
        abstract: "Show a chat's messages, or follow new ones as they are sent.",
        discussion: """
            Shows the newest messages, oldest first as a chat does; for the page before, pass the first key shown \
            as --before. With --follow, prints each new message once it commits, until Ctrl-C: a log line each \
            in table formats, one JSON object per line with --format json.

            Examples:
              messages -NxQ3bH0Jb2Sc5HWq5nQ
              messages -NxQ3bH0Jb2Sc5HWq5nQ --limit 100 --before -NxQ9aA0Jb2Sc5HWq5zz
              messages -NxQ3bH0Jb2Sc5HWq5nQ --follow
            """)

    @Argument(help: ArgumentHelp("The chat's key (a push ID such as -NxQ3bH0Jb2Sc5HWq5nQ).", valueName: "chat-key"))
    var chatKey: String
    @Option(help: "How many messages to show.") var limit = 20
    @Option(parsing: .unconditional, help: "Show messages older than this key.") var before: String?
    @Flag(help: "Print new messages as they commit, until Ctrl-C.") var follow = false
    @Option(help: "Output format (default: the session's).") var format: OutputFormat?

    func validate() throws {
        guard limit > 0 else { throw ValidationError("--limit must be positive") }
    }

    func run(in session: Session) throws {
        let format = format ?? session.format
        guard follow else {
            let messages = try session.store().messages(in: chatKey, limit: limit, before: before)
            session.show(DomainViews.messages(messages), as: format)
            return
        }
        let view = FollowView<Message>(
            columns: DomainViews.messageColumns, row: DomainViews.messageRow, logLine: DomainViews.logLine,
            format: format)
        try view.run(try session.store().watchMessages(in: chatKey), following: "chat \(chatKey)", in: session)
    }
}
