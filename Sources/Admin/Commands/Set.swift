import ArgumentParser

/// `set [NAME VALUE]`: the session's settings.
struct SetCommand: ConsoleCommand {
    static let configuration = CommandConfiguration(
        commandName: "set",
        abstract: "Show or change a setting of this session: format, timing, quiet.",
        discussion: """
            format   table, expanded, json or csv: how commands print unless given --format \
            timing   on or off: print each command's duration on stderr (also: timing on|off) \
            quiet    on or off: informational messages on stderr

            Examples:
              set
              set format expanded
              set timing on
            """)

    @Argument(help: "The setting.") var name: Setting?
    @Argument(help: "Its new value.") var value: String?

    enum Setting: String, CaseIterable, ExpressibleByArgument {
        case format, timing, quiet
    }

    func validate() throws {
        if name != nil, value == nil { throw ValidationError("missing VALUE (set \(name!.rawValue) VALUE)") }
    }

    func run(in session: Session) throws {
        guard let name, let value else {
            session.output.write(DomainViews.record([
                ("format", .text(session.format.rawValue)), ("timing", .text(session.isTiming ? "on" : "off")),
                ("quiet", .text(session.isQuiet ? "on" : "off")),
            ], format: session.format))
            return
        }
        switch name {
        case .format:
            guard let format = OutputFormat(rawValue: value) else {
                throw ConsoleError(.usage, "format must be one of \(OutputFormat.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            session.format = format
        case .timing: session.isTiming = try Self.onOff(value)
        case .quiet: session.isQuiet = try Self.onOff(value)
        }
    }

    static func onOff(_ value: String) throws -> Bool {
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
        abstract: "Print each command's duration on stderr: on, off, or toggle.",
        discussion: """
            Examples:
              timing on
              timing
            """)

    @Argument(help: "on or off; without it, toggles.") var value: String?

    func run(in session: Session) throws {
        session.isTiming = try value.map(SetCommand.onOff) ?? !session.isTiming
        session.inform("Timing is \(session.isTiming ? "on" : "off").")
    }
}
