import ArgumentParser
import Foundation
import Storage

/// `--wait SECONDS`, for the commands that take the maintenance lock (check, the repairs, chat merge,
/// distribute): how long to queue behind another check, repair or import instead of failing at once.
struct MaintenanceWaitOption: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "Wait up to this long for another check, repair, import or sync to finish.",
            valueName: "seconds"))
    var wait: Double = 0

    func validate() throws {
        guard wait >= 0, wait.isFinite else { throw ValidationError("--wait must be 0 or more seconds") }
        // PostgreSQL's lock_timeout, which bounds the wait, stops at 2^31-1 ms.
        guard wait <= Self.longest else {
            throw ValidationError("--wait must be at most \(Int(Self.longest)) seconds (about 24.8 days)")
        }
    }

    /// The longest wait PostgreSQL can bound, in seconds.
    static let longest = Double(Int32.max / 1000)

    /// The wait, saying on a terminal whom it waits for.
    func maintenanceWait(in session: Session) -> MaintenanceWait {
        MaintenanceWait(seconds: wait) { [diagnostics = session.diagnostics, wait] holder in
            guard diagnostics.isTerminal else { return }
            diagnostics.line("Waiting up to \(Int(wait.rounded(.up))) s for " + Self.describe(holder) + " to finish…")
            diagnostics.flush()
        } onReadBeside: { [diagnostics = session.diagnostics] holder in
            guard diagnostics.isTerminal else { return }
            diagnostics.line(
                "Reading the store as it was before " + Self.describe(holder) + ", which has not switched in yet.")
            diagnostics.flush()
        }
    }

    /// Who holds a lock, as the operator knows them: the maintenance lock (a check, repair or import), or with
    /// `tables` the tables themselves (an import replacing the tree, or another session's VACUUM FULL or DDL).
    static func describe(_ holder: LockHolder?, tables: Bool = false) -> String {
        guard let holder else { return tables ? "the session holding the tables" : "another check, repair or import" }
        let what =
            if holder.isImport {
                "an import"
            } else if holder.isSync {
                "a sync"
            } else if holder.isMirror {
                "a mirror"
            } else {
                tables ? "another session" : "a check or repair"
            }
        var parts = ["pid \(holder.pid)"]
        if tables, !holder.isImport, !holder.isSync, !holder.isMirror, !holder.application.isEmpty {
            parts.insert(holder.application, at: 0)
        }
        if !holder.role.isEmpty { parts.append("role \(holder.role)") }
        if let since = DomainViews.time(seconds: holder.since?.timeIntervalSince1970) { parts.append("since " + since) }
        return what + " (" + parts.joined(separator: ", ") + ")"
    }
}
