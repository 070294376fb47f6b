import ArgumentParser
import Storage

/// `denormalize posters`: rewrite the `poster` copy in every post.
struct Denormalize: ConsoleCommand {
    static let configuration = CommandConfiguration(
        commandName: "denormalize",
        abstract: "Rewrite the poster copy in every post from /users.",
        discussion: """
            Examples:
              denormalize posters
            """,
        subcommands: [DenormalizePosters.self])

    func run(in session: Session) throws {
        throw ConsoleError(.usage, "denormalize what? posters (see help denormalize)")
    }
}

/// `denormalize posters`.
struct DenormalizePosters: ConsoleCommand {
    static let configuration = CommandConfiguration(
        commandName: "posters",
        abstract: "Set every post's poster to {uid: owner, username: the owner's current username}.",
        discussion: """
            One transaction, or with --batch-size one per batch of owners; only posts whose poster is wrong are \
            written. Fixes the poster check.

            Examples:
              denormalize posters
              denormalize posters --dry-run --format json
            """)

    @OptionGroup var batch: RepairBatchOption
    @OptionGroup var options: RepairRunOptions

    func run(in session: Session) throws {
        try options.run(.posters, in: session, options: RepairOptions(batchSize: batch.batchSize))
    }
}
