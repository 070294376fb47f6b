import Foundation

/// One line of console input and where it came from, for error messages.
struct SourceLine {
    /// The line as written.
    var text: String
    /// `file:line` for scripts, nil for argv and `-c`.
    var location: String?
    /// Why the line cannot run (too long to keep, unreadable); reported at its place, as a usage error.
    var problem: String?
}

/// Runs commands however they are given (argv, `-c`, `-f`, piped stdin, the terminal's prompt): a loop over script
/// lines and one over the prompt's, both running each command through `execute`, with one error policy.
struct MainLoop {
    let session: Session
    let errorPolicy: ErrorPolicy
    let echoesCommands: Bool

    /// Runs the command already split into arguments (from argv) and returns the exit status.
    func run(arguments: [String]) -> ExitStatus {
        execute(arguments, text: arguments.joined(separator: " "), location: nil)
    }

    /// Runs script lines in order, honoring the error policy; returns the most serious outcome's status. A line
    /// ending in a backslash, or with a quote still open, goes on on the next line. `check` finding violations
    /// (status 3) is a finding, not an error: the script goes on, and ends with status 3.
    func run(lines: some Sequence<SourceLine>) -> ExitStatus {
        var worst = ExitStatus.success
        var pending: SourceLine?
        for line in lines {
            if let problem = line.problem {
                report(ConsoleError(.usage, problem), command: nil, location: line.location)
                worst = max(worst, .usage)
                pending = nil
                if errorPolicy == .stop { break }
                continue
            }
            let statement = pending.map { SourceLine(text: $0.text + "\n" + line.text, location: $0.location) } ?? line
            guard statement.text.utf8.count <= ScriptLines.maximumLineBytes else {
                let reason =
                    "a command of more than \(ScriptLines.maximumLineBytes >> 20) MB (\(Self.incompleteness(of: statement.text)))"
                report(ConsoleError(.usage, reason), command: nil, location: statement.location)
                worst = max(worst, .usage)
                pending = nil
                if errorPolicy == .stop { break }
                continue
            }
            guard Self.isComplete(statement.text) else {
                pending = statement
                continue
            }
            pending = nil
            let status = execute(line: Self.joiningContinuations(statement.text), location: statement.location)
            worst = max(worst, status)
            if session.wantsToQuit || (status != .success && status != .violationsFound && errorPolicy == .stop) {
                break
            }
            // Ctrl-C that the command did not take as its way to end (as --follow does) stops the script.
            if Interrupt.isPending {
                report(ConsoleError(.commandFailed, "interrupted"), command: nil, location: line.location)
                return max(worst, .commandFailed)
            }
        }
        if let pending {
            let reason = Self.incompleteness(of: pending.text)
            report(
                ConsoleError(.usage, "the script ends inside a command (\(reason))"), command: nil,
                location: pending.location)
            worst = max(worst, .usage)
        }
        return worst
    }

    /// The interactive console: prompt, read, run, until `quit` or end of input. Errors never end it. Lines are
    /// edited with libedit when it is installed, with history kept in `historyFile` across sessions.
    func runInteractive(historyFile: String?) -> ExitStatus {
        session.inform("admin console. Type help for commands, \\? for backslash commands, quit or Ctrl-D to leave.")
        // Connect now, as psql does: the prompt names the connection, and Tab can offer uids at once.
        do {
            _ = try session.store()
        } catch {
            report(ConsoleError.from(error), command: nil, location: nil)
        }
        let completer = Completer(session: session)
        let editor = LineEditor.load(historyFile: historyFile) { completer.complete(wordsBefore: $0, word: $1) }
        while !session.wantsToQuit {
            var statement: String?
            var prompt = "admin@\(session.promptName)=> "
            while true {
                let text: String?
                if let editor {
                    text = editor.readLine(prompt: prompt)
                } else {
                    session.output.write(prompt)
                    session.output.flush()
                    text = readLine(strippingNewline: true)
                }
                guard let text else { break }
                let joined = statement.map { $0 + "\n" + text } ?? text
                statement = joined
                if Self.isComplete(joined) { break }
                // psql's continuation prompt: the command goes on.
                prompt = "admin@\(session.promptName)-> "
            }
            guard let statement else {
                session.output.line()
                session.output.flush()
                // Ctrl-C at the prompt abandons the line, as in psql; only Ctrl-D (end of input) leaves.
                if Interrupt.isPending {
                    Interrupt.consume()
                    continue
                }
                break
            }
            editor?.remember(statement)
            _ = execute(line: Self.joiningContinuations(statement), location: nil)
        }
        session.output.flush()
        return .success
    }

    /// Runs the startup file (`$ADMINRC`, else `~/.adminrc`) when there is one: console lines such as
    /// `\set format expanded`. Its errors are reported and do not stop the console.
    func runStartupFile(environment: [String: String]) {
        let path = environment["ADMINRC"] ?? environment["HOME"].map { $0 + "/.adminrc" }
        guard let path, FileManager.default.isReadableFile(atPath: path),
            let lines = try? SourceLine.lines(ofFile: path)
        else { return }
        let startup = MainLoop(session: session, errorPolicy: .continue, echoesCommands: false)
        _ = startup.run(lines: lines)
    }

    /// Where the interactive console keeps its history: $ADMIN_HISTORY, else ~/.admin_history (like psql's
    /// PSQL_HISTORY and ~/.psql_history); none without a home directory.
    static func historyFile(environment: [String: String]) -> String? {
        if let path = environment["ADMIN_HISTORY"], !path.isEmpty { return path }
        guard let home = environment["HOME"], !home.isEmpty else { return nil }
        return home + "/.admin_history"
    }

    /// Whether `text` is a whole command: no quote left open and no backslash at the end (which continues a long
    /// command on the next line).
    static func isComplete(_ text: String) -> Bool {
        if text.hasSuffix("\\") && !text.trimmingCharacters(in: .whitespaces).hasPrefix("\\") { return false }
        do {
            _ = try Tokenizer.split(text)
            return true
        } catch {
            return !error.description.hasPrefix("unterminated")
        }
    }

    /// Why `text` is not a whole command: the tokenizer's complaint, or the trailing backslash.
    static func incompleteness(of text: String) -> String {
        do {
            _ = try Tokenizer.split(text)
            return "a trailing backslash"
        } catch {
            return error.description
        }
    }

    /// A command written over several lines as one line: a backslash and the newline after it are a space.
    static func joiningContinuations(_ text: String) -> String {
        text.replacingOccurrences(of: "\\\n", with: " ")
    }

    /// Runs one line: a backslash command, a comment, or a console command.
    func execute(line text: String, location: String?) -> ExitStatus {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if trimmed.hasPrefix("\\") {
            if echoesCommands { session.output.line(TerminalText.escaped(text, keepingNewlines: true)) }
            // What a backslash command prints shows now, not with the next command's output.
            defer { session.output.flush() }
            do {
                return try MetaCommand.run(trimmed, loop: self, location: location)
            } catch {
                report(error, command: String(trimmed.prefix { !$0.isWhitespace }), location: location)
                return error.status
            }
        }
        let arguments: [String]
        do {
            arguments = try Tokenizer.split(text)
        } catch {
            report(ConsoleError(.usage, error.description), command: nil, location: location)
            return .usage
        }
        return execute(arguments, text: text, location: location)
    }

    private func execute(_ arguments: [String], text: String, location: String?) -> ExitStatus {
        guard !arguments.isEmpty else { return .success }
        if echoesCommands {
            session.output.line(TerminalText.escaped(text, keepingNewlines: true))
        }
        defer { session.output.flush() }
        Interrupt.commandStarted()
        let started = ContinuousClock.now
        defer {
            Interrupt.commandEnded()
            if session.isTiming {
                session.output.flush()
                let elapsed = started.duration(to: .now).components
                let milliseconds = Double(elapsed.seconds) * 1000 + Double(elapsed.attoseconds) / 1e15
                session.diagnostics.line("Time: " + String(format: "%.3f ms", milliseconds))
                session.diagnostics.flush()
            }
        }
        do {
            try Dispatcher.run(arguments, in: session)
            endEchoedInterruptLine()
            return .success
        } catch {
            session.output.flush()
            endEchoedInterruptLine()
            report(error, command: arguments[0], location: location)
            return error.status
        }
    }

    /// After Ctrl-C at a terminal, which echoed `^C` where the cursor stood (after a watch's or a follow's
    /// output): a newline, so that what comes next, an error or the prompt, starts a line of its own.
    private func endEchoedInterruptLine() {
        guard Interrupt.cameDuringCommandOrSince, session.isInteractive, session.diagnostics.isTerminal else { return }
        session.output.flush()
        session.diagnostics.line()
        session.diagnostics.flush()
    }

    /// `admin:FILE:LINE: COMMAND: message`, the way psql names the place of a script error.
    func report(_ error: ConsoleError, command: String?, location: String?) {
        var prefix = "admin:"
        if let location { prefix += "\(location):" }
        if let command { prefix += " \(command):" }
        session.diagnostics.line(
            session.colored(TerminalText.escaped(prefix), .red) + " "
                + ConsoleError.bounded(TerminalText.escaped(error.message, keepingNewlines: true)))
        session.diagnostics.flush()
    }
}

extension SourceLine {
    /// The lines of a script file (`-` for stdin), numbered for error messages, read as they are run.
    static func lines(ofFile path: String) throws -> ScriptLines {
        // As psql: a missing file is named with the system's reason.
        try ScriptLines(path: path)
    }
}
