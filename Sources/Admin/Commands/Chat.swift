import ArgumentParser
import Storage

/// `chat open|send|merge`.
struct ChatCommand: ConsoleCommand {
    static let configuration = CommandConfiguration(
        commandName: "chat",
        abstract: "Find a two-person chat, send a message, or merge duplicate chats.",
        discussion: """
            Examples:
              chat open alice bob
              chat send --from alice --to bob "see you at eight"
              chat merge -NxQ3bH0Jb2Sc5HWq5nQ -NxQ4cI1Kc3Td6IXr6oR --dry-run
            """,
        subcommands: [ChatOpen.self, ChatSend.self, ChatMerge.self])

    func run(in session: Session) throws {
        throw ConsoleError(.usage, "chat what? open, send or merge (see help chat)")
    }
}

/// `chat open A B`.
struct ChatOpen: ConsoleCommand {
    static let configuration = CommandConfiguration(
        commandName: "open", abstract: "Show the chat between two users, or say there is none (exit 1).",
        discussion: """
            Finds the pair's two-member chat from either user's copies, preferring the one with the stable member \
            hash. When the pair has several chats (the app's hash bug made duplicates), it shows the best and \
            warns; chat merge joins them.

            Examples:
              chat open alice bob
              chat open alice bob --format json
            """)

    @Argument(help: "One member's uid.") var a: String
    @Argument(help: "The other member's uid.") var b: String
    @Option(help: "Output format (default: the session's).") var format: OutputFormat?

    func run(in session: Session) throws {
        let chats = try session.store().chats(between: a, b)
        guard let chat = chats.first else { throw ConsoleError(.commandFailed, "no chat between \(a) and \(b)") }
        if chats.count > 1 {
            session.warn(
                """
                \(a) and \(b) have \(chats.count) chats: \(chats.map(\.key).joined(separator: ", ")); \
                chat merge KEEP DROP joins two of them
                """)
        }
        let stable = ChatMemberHash.stableText(a, b)
        session.showRecord(
            [
                ("key", .text(chat.key)), ("path", .text("/chats/\(chat.uid)/\(chat.key)")),
                ("title", DomainViews.cell(chat.title)),
                ("members", .list(chat.members)), ("member_hash", DomainViews.cell(chat.memberHash)),
                ("stable_hash", .boolean(chat.memberHash == stable)),
                ("last_message", DomainViews.cell(chat.lastMessage)),
                ("last_message_sent", chat.lastMessageSent.map(Cell.number) ?? .null),
                ("time", DomainViews.cell(DomainViews.time(seconds: chat.lastMessageSent))),
            ], as: format ?? session.format)
    }
}

/// `chat send --from A --to B TEXT`.
struct ChatSend: ConsoleCommand {
    static let configuration = CommandConfiguration(
        commandName: "send", abstract: "Send a message, creating the chat on the first one.",
        discussion: """
            In one transaction: the chat is created if the pair has none (a copy for each member, titled \
            "<sender>, <recipient>", with the stable member hash), the message is appended with its sender and \
            timestamp (seconds), and every copy's lastMessage and lastMessageSent describe it. Followers of the \
            chat (messages --follow, chats --follow) see it once it commits. The sender must follow the recipient, \
            as in the app. Words after the options form the text; quote it to keep spaces or a leading "-".

            Examples:
              chat send --from alice --to bob "see you at eight"
              chat send --from alice --to bob see you at eight
            """)

    @Option(help: "The sender's uid.") var from: String
    @Option(help: "The recipient's uid.") var to: String
    @Argument(help: ArgumentHelp("The message; words are joined with spaces.", valueName: "text"))
    var words: [String] = []
    @Option(help: "Output format (default: the session's).") var format: OutputFormat?

    func validate() throws {
        guard !words.isEmpty else { throw ValidationError("missing TEXT, the message") }
    }

    func run(in session: Session) throws {
        let sent = try session.store().sendMessage(from: from, to: to, text: words.joined(separator: " "))
        session.showRecord(
            [
                ("chat", .text(sent.chat.key)), ("created_chat", .boolean(sent.createdChat)),
                ("message", .text(sent.message.key)), ("path", .text("/messages/\(sent.chat.key)/\(sent.message.key)")),
                ("timestamp", sent.message.timestamp.map(Cell.number) ?? .null),
                ("last_message", DomainViews.cell(sent.chat.lastMessage)),
            ], as: format ?? session.format)
    }
}

/// `chat merge KEEP DROP`.
struct ChatMerge: ConsoleCommand {
    static let configuration = CommandConfiguration(
        commandName: "merge", abstract: "Move the messages of chat DROP into chat KEEP and delete DROP's copies.",
        discussion: """
            For duplicate chats of one pair (the chat_duplicates check lists them; check never merges by itself). \
            Both chats must have the same members and no key under /messages/CHAT in common (a message, or a \
            value kept beside them). KEEP's copies then describe the newest message of the two. One transaction; \
            --dry-run shows the rows it would change.

            --all merges every group of duplicates at once, keeping the newest chat of each (by creation time, \
            which a push ID holds) or with --keep oldest the first; one transaction of a dozen statements \
            however many chats merge, refused whole if any merge is.

            Examples:
              chat merge -NxQ3bH0Jb2Sc5HWq5nQ -NxQ4cI1Kc3Td6IXr6oR --dry-run
              chat merge -NxQ3bH0Jb2Sc5HWq5nQ -NxQ4cI1Kc3Td6IXr6oR
              chat merge --all --dry-run
              chat merge --all --keep oldest
            """)

    @Argument(help: ArgumentHelp("The chat that stays.", valueName: "keep")) var kept: String?
    @Argument(help: "The chat merged into it and deleted.") var drop: String?
    @Flag(help: "Merge every group of duplicate chats (same two members), keeping one of each.") var all = false
    @Option(
        name: .customLong("keep"), help: "With --all, the chat each group keeps: newest or oldest (by creation time).")
    var keeping: ChatToKeep = .newest
    @OptionGroup var options: RepairRunOptions

    func validate() throws {
        if all, kept != nil { throw ValidationError("give KEEP DROP or --all, not both") }
        if !all, drop == nil { throw ValidationError("missing \(kept == nil ? "KEEP DROP" : "DROP") (or --all)") }
    }

    func run(in session: Session) throws {
        guard all else {
            // validate() made sure of both.
            guard let kept, let drop else { throw ValidationError("missing KEEP DROP (or --all)") }
            return try options.run(.chatMerge, in: session, options: RepairOptions(mergedChats: (kept, drop)))
        }
        guard
            options.dryRun
                || options.confirmation.confirm(
                    "Merge every group of duplicate chats, keeping the \(keeping.rawValue) of each (try --dry-run first)?",
                    in: session)
        else { return }
        let report = try session.store().mergeDuplicateChats(
            keeping: keeping, isDryRun: options.dryRun, waitSeconds: options.waiting.wait)
        RepairReportView(format: options.format ?? session.format).printMerges(report, to: session)
    }
}
