import ArgumentParser
import Foundation
import Storage

/// The options every repair command takes.
/// `--batch-size N` of the repairs that can run as a series of transactions.
struct RepairBatchOption: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "Commit in batches of about N users (by uid) or chats (by key), one transaction each.",
            discussion: """
                Instead of one transaction for the whole store: each batch is committed before the next, so that a very \
                large store is never rewritten in one long transaction. Interrupted, it leaves the batches before done; \
                run it again to finish, as it only changes what is still wrong.
                """,
            valueName: "N"))
    var batchSize: Int?

    func validate() throws {
        if let batchSize, batchSize < 1 { throw ValidationError("--batch-size must be 1 or more") }
    }
}

struct RepairRunOptions: ParsableArguments {
    @Flag(help: "Do the repair, report what it changed, then roll back.")
    var dryRun = false

    @Option(help: "Output format of the report (default: the session's).")
    var format: OutputFormat?

    @OptionGroup var waiting: MaintenanceWaitOption

    @OptionGroup var confirmation: Confirmation

    /// Runs `repair` in one transaction and prints its report; on a terminal, asks first unless it is a dry run.
    func run(_ repair: Repair, in session: Session, options: RepairOptions = RepairOptions()) throws {
        guard
            dryRun
                || confirmation.confirm(
                    "\(repair.commandName) rewrites rows in place (try --dry-run first). Go on?", in: session)
        else { return }
        var options = options
        options.isDryRun = dryRun
        options.waitSeconds = waiting.wait
        let progress = ProgressBar(repair.commandName, total: nil, session: session)
        defer { progress?.finish() }
        let report = try session.store().repair(repair, options: options) { index, count in
            progress?.show("\(options.batchSize == nil ? "statement" : "batch") \(index + 1) of \(count)")
        }
        progress?.finish()
        RepairReportView(format: format ?? session.format).print([report], to: session)
    }
}
