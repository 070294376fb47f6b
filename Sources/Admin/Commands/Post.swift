import ArgumentParser
import Storage

/// `post create|delete`.
struct PostCommand: ConsoleCommand {
    static let configuration = CommandConfiguration(
        commandName: "post",
        abstract: "Create or delete a post, with its timeline fan-out.",
        discussion: """
            Examples:
              post create alice --image-url https://example.com/a.jpg --image-height 320
              post delete alice -NxQ3bH0Jb2Sc5HWq5nQ
            """,
        subcommands: [PostCreate.self, PostDelete.self])

    func run(in session: Session) throws {
        throw ConsoleError(.usage, "post what? create or delete (see help post)")
    }
}

/// `post create UID --image-url URL --image-height H`.
struct PostCreate: ConsoleCommand {
    static let configuration = CommandConfiguration(
        commandName: "create", abstract: "Create a post and write it into the owner's and followers' timelines.",
        discussion: """
            The post gets a new push ID, created_at now (seconds), like_count 0 and the poster copy; the owner's \
            and every follower's timeline get an entry, all in one transaction.

            Examples:
              post create alice --image-url https://example.com/a.jpg --image-height 320
            """)

    @Argument(help: "The owner's uid.") var uid: String
    @Option(help: "The image's URL.") var imageURL: String
    @Option(help: "The image's height as the app laid it out.") var imageHeight: Double
    @Option(help: "Output format (default: the session's).") var format: OutputFormat?

    func run(in session: Session) throws {
        let (post, entries) = try session.store().createPost(owner: uid, imageURL: imageURL, imageHeight: imageHeight)
        session.showRecord(
            [
                ("key", .text(post.key)), ("path", .text("/posts/\(post.ownerUID)/\(post.key)")),
                ("created_at", post.createdAt.map(Cell.number) ?? .null), ("timeline_entries", .integer(entries)),
            ], as: format ?? session.format)
    }
}

/// `post delete UID KEY`.
struct PostDelete: ConsoleCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete", abstract: "Delete a post with its likes and timeline entries.",
        discussion: """
            Examples:
              post delete alice -NxQ3bH0Jb2Sc5HWq5nQ
            """)

    @Argument(help: "The owner's uid.") var uid: String
    @Argument(help: "The post's key (a push ID such as -NxQ3bH0Jb2Sc5HWq5nQ).") var key: String
    @Option(help: "Output format (default: the session's).") var format: OutputFormat?
    @OptionGroup var confirmation: Confirmation

    func run(in session: Session) throws {
        guard confirmation.confirm("Delete post \(key) of \(uid) with its likes and timeline entries?", in: session)
        else { return }
        let removed = try session.store().deletePost(owner: uid, key: key)
        session.show(
            ResultTable(columns: ["table", "deleted"], rows: removed.map { [.text($0.table), .integer($0.rows)] }),
            as: format ?? session.format)
    }
}
