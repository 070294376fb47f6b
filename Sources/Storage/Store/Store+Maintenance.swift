import FirebaseTree
import Foundation

extension Store {
    /// Runs `checks` in one read-only snapshot and returns each one's violation count, first `examples` paths and
    /// duration.
    ///
    /// Works with a role that may only SELECT. Two maintenance runs (checks or repairs) never overlap on one
    /// database: the second fails with a `.server` error whose `sqlStateCode` is `55P03` (lock not available), at
    /// once or after `wait`. A whole-tree import that loads beside the store is the exception: beside it, a check
    /// reads the store as it was before the import, at once, and `wait.onReadBeside` hears of it.
    ///
    /// ```swift
    /// let results = try store.check([.likeCount, .orphans], examples: 3)
    /// ```
    /// `onStart` hears of each check as it begins, with its position (from 0) among `checks`; `onResult` of each
    /// result as it is known (so that a run that fails half-way can still say what it found).
    public func check(
        _ checks: [IntegrityCheck] = IntegrityCheck.allCases, examples: Int = 5, wait: MaintenanceWait = .none,
        onStart: (IntegrityCheck, _ index: Int) -> Void = { _, _ in },
        onResult: (CheckResult) -> Void = { _ in }
    ) throws -> [CheckResult] {
        try checking.check(checks, examples: examples, wait: wait, onStart: onStart, onResult: onResult)
    }

    /// Keeps `run` in `check_runs` (migration 0009), in a transaction of its own; the server fills in the role.
    /// Needs INSERT on `check_runs` and nothing else.
    public func record(_ run: CheckRun) throws {
        try checking.record(run)
    }

    /// The recorded runs, newest first, at most `limit` of them. An entry the console did not write as it
    /// does (edited by hand, written by another tool) is left out and counted in `oddEntries`, and an unknown
    /// outcome reads as failed, so that one odd row cannot stop the history or `--fail-on new`.
    public func checkRuns(limit: Int) throws -> [CheckRun] {
        try checking.checkRuns(limit: limit)
    }

    /// Each check's count in the last recorded run that completed and ran it (a check no such run ran is
    /// missing): what `check --fail-on new` compares with.
    public func lastRecordedCounts(of checks: [IntegrityCheck]) throws -> [IntegrityCheck: Int] {
        try checking.lastRecordedCounts(of: checks)
    }

    /// Runs one repair in one transaction (rolled back with `options.isDryRun`) and reports the rows each of its
    /// statements changed. Idempotent: a second run changes nothing.
    ///
    /// ```swift
    /// let report = try store.repair(.likeCounts)
    /// report.rowsChanged  // posts whose like_count was set
    /// ```
    /// `onStep` hears of each statement as it begins: its position (from 0) and the number of statements (of
    /// each batch as it begins, when batched).
    ///
    /// `backfill timelines` with `options.batchSize` runs instead as one transaction per range of about that many
    /// users (by uid, the first range from the lowest uid of any table, the last to the highest), each committed
    /// (or rolled back in a dry run) before the next; a failure leaves the ranges before it done, which is safe
    /// since the repair is idempotent. The report adds up the ranges.
    public func repair(
        _ repair: Repair, options: RepairOptions = RepairOptions(),
        onStep: (_ index: Int, _ count: Int) -> Void = { _, _ in }
    ) throws -> RepairReport {
        try repairs.repair(repair, options: options, onStep: onStep)
    }

    /// Checks, runs the repairs of the failing checks in `Repair.fixOrder`, then checks again, all
    /// in one transaction (rolled back with `isDryRun`, so the second check shows what the repairs would leave).
    /// `onProgress` hears of each check and repair as it begins.
    public func checkAndFix(
        _ checks: [IntegrityCheck] = IntegrityCheck.allCases, examples: Int = 5, isDryRun: Bool = false,
        wait: MaintenanceWait = .none, onProgress: (FixStep) -> Void = { _ in }
    ) throws -> (before: [CheckResult], repairs: [RepairReport], after: [CheckResult]) {
        try repairs.checkAndFix(checks, examples: examples, isDryRun: isDryRun, wait: wait, onProgress: onProgress)
    }

    /// Merges two chats of one pair: the messages of `drop` move into `keep`, `drop`'s copies go, and `keep`'s copies
    /// describe the newest message of the two; one transaction, rolled back in a dry run. Refused unless both
    /// chats exist with the same members and no key under /messages/CHAT (a message or an unmapped value) is in
    /// both, and unless neither chat's /messages node is a leaf while the other has messages.
    public func mergeChats(keep: String, drop: String, isDryRun: Bool = false) throws -> RepairReport {
        try repairs.mergeChats(keep: keep, drop: drop, isDryRun: isDryRun)
    }

    /// Merges every group of two-person chats with the same members into one chat, the newest or
    /// the oldest of the group by key (push IDs sort by creation time), leaving what `mergeChats` would leave
    /// pair by pair, in a dozen statements however many chats merge; all in one transaction, rolled back in a
    /// dry run. Any merge that is refused (a key under /messages/CHAT in two chats of a group) refuses them all.
    /// `waitSeconds`: how long to wait for another check, repair or import to finish.
    public func mergeDuplicateChats(keeping: ChatToKeep, isDryRun: Bool = false, waitSeconds: Double = 0) throws
        -> RepairReport
    {
        try repairs.mergeDuplicateChats(keeping: keeping, isDryRun: isDryRun, waitSeconds: waitSeconds)
    }

    /// `VACUUM (ANALYZE)` of each of the tree's tables, or `VACUUM FULL` (which rewrites each table, needs room
    /// for the copy, and locks it meanwhile): gives back the space of deleted and rolled-back rows, such as a
    /// failed import's, and refreshes the planner's statistics. Runs outside any transaction, table by table.
    /// On a distributed store Citus vacuums every shard, and the sizes are the shards' on every node.
    public func vacuum(full: Bool = false) throws -> [VacuumedTable] {
        try vacuuming.vacuum(full: full)
    }

    /// Drops the schemas parallel imports that never finished (killed, or their server stopped) left behind, as
    /// the next whole-tree import would; unless the maintenance lock is held, since a running import loads into
    /// such schemas: they are then kept, and the report names who holds it.
    public func dropImportLeftovers() throws -> LeftoverDrop {
        try vacuuming.dropLeftovers()
    }
}
