import Foundation
import Storage

/// The mirror's state as Prometheus text, for node_exporter's textfile collector.
struct MirrorMetrics {
    var progress: MirrorProgress
    var connected: Bool

    var text: String {
        var lines: [String] = []
        func sample(_ name: String, _ type: String, _ help: String, _ value: String) {
            lines += ["# HELP \(name) \(help)", "# TYPE \(name) \(type)", "\(name) \(value)"]
        }
        sample(
            "admin_mirror_connected", "gauge", "Whether the mirror is reading a stream (1) or ended (0).",
            connected ? "1" : "0")
        sample(
            "admin_mirror_events_applied_total", "counter", "Puts and patches applied since the mirror started.",
            String(progress.eventsApplied))
        sample("admin_mirror_transactions_total", "counter", "Transactions committed.", String(progress.transactions))
        sample(
            "admin_mirror_last_event_timestamp_seconds", "gauge", "When the newest applied event was read.",
            progress.lastEventRead.map { String(format: "%.3f", $0.timeIntervalSince1970) } ?? "NaN")
        sample(
            "admin_mirror_last_heard_timestamp_seconds", "gauge",
            "When the stream last sent anything (keep-alives too).",
            progress.lastHeard.map { String(format: "%.3f", $0.timeIntervalSince1970) } ?? "NaN")
        sample(
            "admin_mirror_seconds_behind", "gauge",
            "Seconds from reading the last committed transaction's newest event to its commit.",
            String(format: "%.6f", progress.secondsBehind))
        return lines.joined(separator: "\n") + "\n"
    }

    /// Writes the file atomically, readable by the collector's user.
    func write(to path: String) throws {
        try OutputFile.replace(path, withReadable: text)
    }
}
