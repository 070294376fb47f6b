import ArgumentParser
import Storage

/// `backfill like-counts|timelines`: recompute the app's counters and fan-out copies from the data.
struct Backfill: ConsoleCommand {
    static let configuration = CommandConfiguration(
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
            One transaction; only posts whose count is wrong are written. Fixes the like_count check.

            Examples:
              backfill like-counts
              backfill like-counts --dry-run
            """)

    @OptionGroup var options: RepairRunOptions

    func run(in session: Session) throws {
        try options.run(.likeCounts, in: session)
    }
}

/// `backfill timelines [--user UID]`.
struct BackfillTimelines: ConsoleCommand {
    static let configuration = CommandConfiguration(
        commandName: "timelines",
        abstract: "Make every timeline hold exactly the user's and their followees' posts.",
        discussion: """
            Adds the missing entries, rewrites those naming the wrong poster and removes entries of existing posts that \
            do not belong (entries of posts that do not exist are orphans: see repair orphans). One transaction. \
            Fixes the timeline_missing and timeline_extra checks.

            With --batch-size N the timelines of about N users (by uid) are repaired per transaction, each committed \
            before the next, so that a very large store is never rewritten in one long transaction; the progress \
            shows the batches. Interrupted, it leaves the batches before done; run it again to finish, as it only \
            changes what is still wrong.

            Examples:
              backfill timelines
              backfill timelines --user alice
              backfill timelines --batch-size 10000
            """)

    @Option(help: "Only this user's timeline.")
    var user: String?

    @Option(help: ArgumentHelp("Repair the timelines of about N users per transaction.", valueName: "N"))
    var batchSize: Int?

    func validate() throws {
        if let batchSize, batchSize < 1 { throw ValidationError("--batch-size must be 1 or more") }
        if batchSize != nil, user != nil { throw ValidationError("--batch-size and --user do not go together") }
    }

    @OptionGroup var options: RepairRunOptions

    func run(in session: Session) throws {
        try options.run(.timelines, in: session, options: RepairOptions(user: user, batchSize: batchSize))
    }
}
