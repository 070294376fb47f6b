import ArgumentParser
import Storage

/// `backfill like-counts|timelines`: recompute the app's counters and fan-out copies from the data.
struct Backfill: ConsoleCommand {
    static let configuration = CommandConfiguration(
        commandName: "backfill",
        abstract: "Recompute like_count or the timelines from the data.",
        discussion: """
            Examples:
              backfill like-counts
              backfill timelines --user alice --dry-run
            """,
        subcommands: [BackfillLikeCounts.self, BackfillTimelines.self])

    func run(in session: Session) throws {
        throw ConsoleError(.usage, "backfill what? like-counts or timelines (see help backfill)")
    }
}

/// `backfill like-counts`.
struct BackfillLikeCounts: ConsoleCommand {
    static let configuration = CommandConfiguration(
        commandName: "like-counts",
        abstract: "Set every post's like_count to the number of its likes.",
        discussion: """
            One transaction, or with --batch-size one per batch of owners; only posts whose count is wrong are \
            written. Fixes the like_count check.

            Examples:
              backfill like-counts
              backfill like-counts --dry-run
            """)

    @OptionGroup var batch: RepairBatchOption
    @OptionGroup var options: RepairRunOptions

    func run(in session: Session) throws {
        try options.run(.likeCounts, in: session, options: RepairOptions(batchSize: batch.batchSize))
    }
}

/// `backfill timelines [--user UID]`.
struct BackfillTimelines: ConsoleCommand {
    static let configuration = CommandConfiguration(
        commandName: "timelines",
        abstract: "Make every timeline hold exactly the user's and their followees' posts.",
        discussion: """
            Adds the missing entries, rewrites those naming the wrong poster and removes entries of existing posts that \
            do not belong (entries of posts that do not exist are orphans: see repair orphans). One transaction, or \
            with --batch-size one per batch of users. \
            Fixes the timeline_missing and timeline_extra checks.

            Examples:
              backfill timelines
              backfill timelines --user alice
              backfill timelines --batch-size 10000
            """)

    @Option(help: "Only this user's timeline.")
    var user: String?

    @OptionGroup var batch: RepairBatchOption
    @OptionGroup var options: RepairRunOptions

    func validate() throws {
        if batch.batchSize != nil, user != nil { throw ValidationError("--batch-size and --user do not go together") }
    }

    func run(in session: Session) throws {
        try options.run(.timelines, in: session, options: RepairOptions(user: user, batchSize: batch.batchSize))
    }
}
