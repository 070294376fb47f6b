import ArgumentParser
import Foundation
import Storage

/// `--wait SECONDS`, for the commands that take the maintenance lock (check, the repairs, chat merge,
/// distribute): how long to queue behind another check, repair or import instead of failing at once.
struct MaintenanceWaitOption: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "Wait up to this long for another check, repair or import to finish.",
            valueName: "seconds"))
    var wait: Double = 0

    func validate() throws {
        guard wait >= 0, wait.isFinite else { throw ValidationError("--wait must be 0 or more seconds") }
    }

    /// The wait, saying on a terminal whom it waits for.
    func maintenanceWait(in session: Session) -> MaintenanceWait {
        MaintenanceWait(seconds: wait) { [diagnostics = session.diagnostics, wait] holder in
            guard diagnostics.isTerminal else { return }
            diagnostics.line("Waiting up to \(Int(wait.rounded(.up))) s for " + Self.describe(holder) + " to finish…")
            diagnostics.flush()
        }
    }

    private static func describe(_ holder: MaintenanceLockHolder?) -> String {
        guard let holder else { return "another check, repair or import" }
        let what = holder.isImport ? "an import" : "a check or repair"
        var parts = ["pid \(holder.pid)"]
        if !holder.role.isEmpty { parts.append("role \(holder.role)") }
        if let since = DomainViews.time(seconds: holder.since?.timeIntervalSince1970) { parts.append("since " + since) }
        return what + " (" + parts.joined(separator: ", ") + ")"
    }
}
