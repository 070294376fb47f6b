import ArgumentParser

/// `settings [NAME VALUE]` (psql's `\set`): the session's settings.
struct SettingsCommand: ConsoleCommand {
    static let configuration = CommandConfiguration(
        commandName: "settings",
        abstract:
            "Show or change a setting of this session: format, timing, quiet, pager, expanded, lock_timeout (also: \\set).",
        discussion: """
            format    table, expanded, json or csv: how commands print unless given --format
            timing    on or off: print each command's duration on stderr (also: \\timing)
            quiet     on or off: informational messages on stderr
            pager     on or off: long tables through $PAGER on a terminal (also: \\pset pager)
            expanded  on, off or auto: records instead of columns, always or when columns would not fit (also: \\x)
            lock_timeout  seconds a command waits for a lock before it fails (default 5; 0 waits forever): an \
            import or a merge holds the tables it writes until it commits, and the app's writes, check and \
            export then fail after this long saying so, rather than hang

            A startup file (~/.adminrc, or $ADMINRC; skipped with -X) can hold such lines, run before anything \
            else: \\set format expanded, \\timing on.

            Examples:
              settings
              settings format expanded
              \\set timing on
              \\x auto
            """)

    @Argument(help: "The setting.") var name: Setting?
    @Argument(help: "Its new value.") var value: String?

    enum Setting: String, CaseIterable, ExpressibleByArgument {
        case format, timing, quiet, pager, expanded
        case lockTimeout = "lock_timeout"
    }

    func validate() throws {
        if let name, value == nil { throw ValidationError("missing VALUE (settings \(name.rawValue) VALUE)") }
    }

    func run(in session: Session) throws {
        guard let name, let value else {
            session.showRecord(
                [
                    ("format", .text(session.format.rawValue)), ("timing", .text(session.isTiming ? "on" : "off")),
                    ("quiet", .text(session.isQuiet ? "on" : "off")),
                    ("pager", .text(session.usesPager ? "on" : "off")),
                    (
                        "expanded",
                        .text(session.expandedMode == .auto ? "auto" : session.format == .expanded ? "on" : "off")
                    ),
                    ("lock_timeout", .text(session.lockTimeout.map { "\(Self.seconds($0))" } ?? "0")),
                ], as: session.format)
            return
        }
        switch name {
        case .format:
            guard let format = OutputFormat(rawValue: value) else {
                throw ConsoleError(
                    .usage, "format must be one of \(OutputFormat.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            session.format = format
        case .timing: session.isTiming = try Self.onOff(value)
        case .quiet: session.isQuiet = try Self.onOff(value)
        case .pager: session.usesPager = try Self.onOff(value)
        case .expanded:
            session.expandedMode = value == "auto" ? .auto : .off
            if value != "auto" { session.format = try Self.onOff(value) ? .expanded : .table }
        case .lockTimeout:
            guard let seconds = Double(value), seconds >= 0, seconds.isFinite else {
                throw ConsoleError(.usage, "lock_timeout takes seconds (0 waits forever), not \(value)")
            }
            // PostgreSQL's largest lock_timeout is about 24.8 days; a longer wait is as good as forever.
            let milliseconds = min((seconds * 1000).rounded(.up), Double(Int32.max))
            session.lockTimeout = seconds == 0 ? nil : .milliseconds(Int64(milliseconds))
        }
    }

    /// A duration in seconds, without a fraction when it has none.
    static func seconds(_ duration: Duration) -> String {
        let value = duration / .seconds(1)
        return value == value.rounded() ? String(Int(value)) : String(value)
    }

    /// on/off (true/false, 1/0) as a Bool.
    static func onOff(_ value: String) throws(ConsoleError) -> Bool {
        switch value {
        case "on", "true", "1": return true
        case "off", "false", "0": return false
        default: throw ConsoleError(.usage, "expected on or off, not \(value)")
        }
    }
}

/// `timing [on|off]`, like psql's `\timing`.
struct Timing: ConsoleCommand {
    static let configuration = CommandConfiguration(
        commandName: "timing",
        abstract: "Print each command's duration on stderr: on, off, or toggle.",
        discussion: """
            Examples:
              timing on
              timing
            """)

    @Argument(help: "on or off; without it, toggles.") var value: String?

    func run(in session: Session) throws {
        session.isTiming =
            try value.map { value throws(ConsoleError) in try SettingsCommand.onOff(value) } ?? !session.isTiming
        session.inform("Timing is \(session.isTiming ? "on" : "off").")
    }
}
