import Foundation
import Storage

/// A check run in Prometheus's text exposition format, for node_exporter's textfile collector.
struct CheckMetrics {
    var run: CheckRun
    /// Whether the run completed (`admin_check_up`).
    var isUp: Bool
    /// Labels every sample carries (`--metrics-label`), to tell several databases' files apart.
    var labels: [(String, String)] = []

    /// The exposition text: HELP and TYPE before each family, one sample per line.
    var text: String {
        var lines: [String] = []
        func family(_ name: String, _ help: String, _ samples: [(labels: String, value: String)]) {
            lines.append("# HELP \(name) \(help)")
            lines.append("# TYPE \(name) gauge")
            lines += samples.map { "\(name)\($0.labels) \($0.value)" }
        }
        func labelSet(_ extra: [(String, String)]) -> String {
            let all = labels + extra
            return all.isEmpty ? "" : "{" + all.map { "\($0)=\"\(Self.escaped($1))\"" }.joined(separator: ",") + "}"
        }
        func perCheck(_ value: (CheckRun.Entry) -> String) -> [(labels: String, value: String)] {
            run.entries.map { (labelSet([("check", $0.check)]), value($0)) }
        }
        family(
            "admin_check_up", "Whether the last check run completed (1) or could not connect or failed (0).",
            [(labelSet([]), isUp ? "1" : "0")])
        family(
            "admin_check_last_run_timestamp_seconds", "When the last check run ended, in seconds since 1970.",
            [(labelSet([]), Self.number(run.finishedAt.timeIntervalSince1970))])
        family(
            "admin_check_exit_status",
            "The exit status of the last check run (0 passed, 3 violations, 2 cannot connect, 1 failed).",
            [(labelSet([]), String(run.exitStatus))])
        family(
            "admin_check_violations", "Violations each check found in the last run.",
            perCheck { String($0.violations) })
        family(
            "admin_check_duration_seconds", "How long each check took in the last run.",
            perCheck { Self.number($0.seconds) })
        family(
            "admin_check_tripped",
            "Whether each check failed the last run (1): over its --allow threshold, or risen with --fail-on new.",
            perCheck { $0.tripped ? "1" : "0" })
        return lines.joined(separator: "\n") + "\n"
    }

    /// Writes the file atomically (a temporary file in its directory, renamed over it), readable by the
    /// collector's user.
    func write(to path: String) throws {
        try OutputFile.replace(path, withReadable: text)
    }

    /// A label value with backslash, double quote and line feed escaped, as the format requires.
    private static func escaped(_ value: String) -> String {
        value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "\n", with: "\\n")
    }

    /// A sample value in seconds: to the microsecond, in Swift's shortest round-tripping spelling, which
    /// Prometheus's parser reads.
    private static func number(_ value: Double) -> String {
        value.isFinite ? ((value * 1e6).rounded() / 1e6).description : "NaN"
    }
}
