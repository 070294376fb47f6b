import ArgumentParser
import Storage

extension FollowPreference: ExpressibleByArgument {}
extension ChatToKeep: ExpressibleByArgument {}

/// `repair follows|chats|orphans|hidden-values|posts-shape`.
struct RepairCommand: ConsoleCommand {
    static let configuration = CommandConfiguration(
        commandName: "repair",
        abstract: "Repair follows, chat copies, orphans, hidden values or the shape of /posts's children.",
        discussion: """
            Examples:
              repair follows --prefer following
              repair chats
              repair orphans --dry-run
              repair hidden-values --dry-run
              repair posts-shape
            """,
        subcommands: [
            RepairFollows.self, RepairChats.self, RepairOrphans.self, RepairHiddenValues.self, RepairPostsShape.self,
        ])

    func run(in session: Session) throws {
        throw ConsoleError(
            .usage, "repair what? follows, chats, orphans, hidden-values or posts-shape (see help repair)")
    }
}

/// `repair follows [--prefer following|followers|union]`.
struct RepairFollows: ConsoleCommand {
    static let configuration = CommandConfiguration(
        commandName: "follows",
        abstract: "Make /following and /followers mirror each other.",
        discussion: """
            union (the default) adds to each side the follows only the other has; following makes /followers the \
            mirror of /following (removing what only /followers has), followers the reverse. One transaction, or with \
            --batch-size one per batch of followers. \
            Fixes the follow_asymmetric check.

            Examples:
              repair follows
              repair follows --prefer following --dry-run
            """)

    @Option(help: "Which side wins: union, following or followers.")
    var prefer = FollowPreference.union

    @OptionGroup var batch: RepairBatchOption
    @OptionGroup var options: RepairRunOptions

    func run(in session: Session) throws {
        try options.run(
            .follows, in: session, options: RepairOptions(followPreference: prefer, batchSize: batch.batchSize))
    }
}

/// `repair chats`.
struct RepairChats: ConsoleCommand {
    static let configuration = CommandConfiguration(
        commandName: "chats",
        abstract: "Give every chat member a copy, make the copies agree and show the newest message.",
        discussion: """
            A chat's members are the union of its copies' members. Members without a copy get one, copies held by \
            others are removed, and every copy takes the title and memberHash of the most recently updated copy, \
            and lastMessage and lastMessageSent from the newest message. One transaction, or with \
            --batch-size one per batch of chats. Fixes the chat_copies, \
            chat_member_hash and chat_last_message checks. Duplicate chats are never merged here (see chat merge).

            Examples:
              repair chats
              repair chats --dry-run
            """)

    @OptionGroup var batch: RepairBatchOption
    @OptionGroup var options: RepairRunOptions

    func run(in session: Session) throws {
        try options.run(.chats, in: session, options: RepairOptions(batchSize: batch.batchSize))
    }
}

/// `repair orphans`: shows the orphans, then removes them.
struct RepairOrphans: ConsoleCommand {
    static let configuration = CommandConfiguration(
        commandName: "orphans",
        abstract: "Remove likes, messages and timeline entries of posts or chats that do not exist.",
        discussion: """
            Shows the orphans (as check --only orphans does) before removing them, in one transaction, or with \
            --batch-size one per batch of keys of each table in turn. Fixes the \
            orphans check.

            Examples:
              repair orphans --dry-run
              repair orphans --examples 50
            """)

    @Option(help: "How many orphan paths to show before removing them.")
    var examples = 10

    @OptionGroup var batch: RepairBatchOption
    @OptionGroup var options: RepairRunOptions

    func run(in session: Session) throws {
        try options.run(
            .orphans, showingFirst: examples, in: session, options: RepairOptions(batchSize: batch.batchSize))
    }
}

/// `repair hidden-values`: shows the hidden values, then removes them.
struct RepairHiddenValues: ConsoleCommand {
    static let configuration = CommandConfiguration(
        commandName: "hidden-values",
        abstract: "Remove leaves that have something stored below them, as the write below them did in Firebase.",
        discussion: """
            In Firebase a value written below a leaf replaces the leaf. Stores written by versions before schema \
            16 kept such a leaf hidden, and it came back once what was below it went. Shows them (as check \
            --only hidden_values does) before removing them, in one transaction. Fixes the hidden_values check.

            Examples:
              repair hidden-values --dry-run
            """)

    @Option(help: "How many paths to show before removing them.")
    var examples = 10

    @OptionGroup var options: RepairRunOptions

    func run(in session: Session) throws {
        try options.run(.hiddenValues, showingFirst: examples, in: session, options: RepairOptions())
    }
}

/// `repair posts-shape`: shows the misshapen children of /posts, then stores each again.
struct RepairPostsShape: ConsoleCommand {
    static let configuration = CommandConfiguration(
        commandName: "posts-shape",
        abstract:
            "Store again the children of /posts stored as a feed post or an owner's posts against their children.",
        discussion: """
            A child of /posts is an AppCoda feed post when some child of it is a leaf or an AppCoda field \
            (imageFileURL, user, votes, timestamp), and a Makestagram owner's posts when every child is an object \
            under another key, whatever order a file writes them in. Versions before schema 23 decided by the \
            first child in the file, so a sync could not bring such a node to its file. Shows them (as check --only \
            posts_shape does), then stores each again from its own export, in one transaction: the tree stays the \
            same, its rows move. Fixes the posts_shape check.

            Examples:
              repair posts-shape --dry-run
            """)

    @Option(help: "How many paths to show before storing them again.")
    var examples = 10

    @OptionGroup var options: RepairRunOptions

    func run(in session: Session) throws {
        try options.run(.postsShape, showingFirst: examples, in: session, options: RepairOptions())
    }
}

extension RepairRunOptions {
    /// Runs `repair` after showing the first `examples` paths its check lists (not in JSON, which reports the
    /// repair alone): what `repair orphans` and `repair hidden-values` remove, `repair posts-shape` stores again.
    func run(_ repair: Repair, showingFirst examples: Int, in session: Session, options: RepairOptions) throws {
        let format = self.format ?? session.format
        if format != .json, let check = IntegrityCheck.allCases.first(where: { $0.repair == repair }) {
            let found = try session.store().check([check], examples: examples)
            CheckReportView(quiet: true, format: format).print(found, to: session)
        }
        try run(repair, in: session, options: options)
    }
}
