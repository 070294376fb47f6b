import Foundation
import Storage

/// psql's backslash commands, for the habits operators bring: `\q`, `\x`, `\timing`, `\i`, `\o`, `\c`, `\set`,
/// `\?`. They act on the console itself, so they are read before the tokenizer, from the REPL, scripts, -c and
/// the startup file alike.
enum MetaCommand {
    /// What `\?` prints.
    static let help = """
        Backslash commands (as in psql):
          \\?                 this list
          \\q                 quit
          \\x [on|off|auto]   records instead of columns (auto: when columns would not fit the terminal)
          \\timing [on|off]   print each command's duration
          \\set [NAME VALUE]  show or change a setting (format, timing, quiet, pager, expanded, lock_timeout);
                             also: settings
          \\pset pager on|off page long tables through $PAGER on a terminal
          \\i FILE            run the commands in FILE
          \\o [FILE]          send command output to FILE (replacing it), or back to stdout
          \\c                 reconnect to the database
          \\! [COMMAND]       run COMMAND in the shell (a shell without one), on this database (\\! psql)

        """

    /// Runs one backslash command line; returns the status it ends with.
    static func run(_ line: String, loop: MainLoop, location: String?) throws(ConsoleError) -> ExitStatus {
        let session = loop.session
        // psql's \!: the rest of the line as the shell reads it (a shell without one), before the tokenizer.
        if line.dropFirst().hasPrefix("!") {
            try runInShell(String(line.dropFirst(2)).trimmingCharacters(in: .whitespaces), session: session)
            return .success
        }
        let words: [String]
        do {
            words = try Tokenizer.split(String(line.dropFirst()))
        } catch {
            throw ConsoleError(.usage, error.description)
        }
        guard let name = words.first else {
            throw ConsoleError(.usage, "a backslash without a command (\\? lists them)")
        }
        let arguments = Array(words.dropFirst())
        switch name {
        case "?":
            session.output.write(help)
        case "q":
            session.wantsToQuit = true
        case "x":
            try expanded(arguments.first, in: session)
        case "timing":
            session.isTiming = try arguments.first.map(SettingsCommand.onOff) ?? !session.isTiming
            session.inform("Timing is \(session.isTiming ? "on" : "off").")
        case "set":
            return loop.run(arguments: ["settings"] + arguments)
        case "pset":
            guard arguments.first == "pager", let value = arguments.dropFirst().first else {
                throw ConsoleError(.usage, "\\pset takes pager on|off")
            }
            session.usesPager = try SettingsCommand.onOff(value)
        case "i", "include":
            guard let file = arguments.first else { throw ConsoleError(.usage, "\\i needs a file") }
            let lines: ScriptLines
            do {
                lines = try SourceLine.lines(ofFile: file)
            } catch {
                throw ConsoleError.from(error)
            }
            return loop.run(lines: lines)
        case "o", "out":
            try session.redirectOutput(to: arguments.first)
        case "c", "connect":
            guard arguments.isEmpty else {
                throw ConsoleError(.usage, "\\c reconnects to the same database; start admin with --db for another")
            }
            session.disconnect()
            do {
                let store = try session.store(requiringSchema: false)
                session.inform("You are now connected to \(store.endpoint).")
            } catch {
                throw ConsoleError.from(error)
            }
        default:
            throw ConsoleError(
                .usage,
                "unknown command \\\(name)"
                    + Dispatcher.suggestion(
                        for: name, among: ["?", "q", "x", "timing", "set", "pset", "i", "o", "c", "!"])
                    + " (\\? lists them)")
        }
        return .success
    }

    /// `\x`, `\x on|off|auto`: toggles between columns and records, or sets the mode.
    private static func expanded(_ value: String?, in session: Session) throws(ConsoleError) {
        switch value {
        case nil:
            session.format = session.format == .expanded ? .table : .expanded
            session.expandedMode = .off
        case "auto":
            session.expandedMode = .auto
            if session.format == .expanded { session.format = .table }
        case let value?:
            let on = try SettingsCommand.onOff(value)
            session.format = on ? .expanded : .table
            session.expandedMode = .off
        }
        let state = session.expandedMode == .auto ? "auto" : session.format == .expanded ? "on" : "off"
        session.inform("Expanded display is \(state).")
    }

    /// `\! COMMAND`: COMMAND run by /bin/sh (the user's shell without one), with this session's connection in
    /// libpq's environment, so that `\! psql` or `\! pg_dump` reach the same database; a failing status fails it.
    private static func runInShell(_ command: String, session: Session) throws(ConsoleError) {
        let variables: [String: String]
        do {
            variables = try session.clientEnvironment()
        } catch {
            throw ConsoleError.from(error)
        }
        session.output.flush()
        let shell = ProcessInfo.processInfo.environment["SHELL"].flatMap { $0.isEmpty ? nil : $0 } ?? "/bin/sh"
        let status = try ChildProcess.run(command.isEmpty ? [shell] : ["/bin/sh", "-c", command], settings: variables)
        if status != 0 { throw ConsoleError(.commandFailed, "\\! exited with status \(status)") }
    }
}
