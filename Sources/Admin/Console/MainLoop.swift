import Foundation

/// One line of console input and where it came from, for error messages.
struct SourceLine {
    /// The line as written.
    var text: String
    /// `file:line` for scripts, nil for argv and `-c`.
    var location: String?
}

/// The single loop behind every way of giving commands: argv, `-c`, `-f`, piped stdin and the terminal.
struct MainLoop {
    let session: Session
    let errorPolicy: ErrorPolicy
    let echoesCommands: Bool

    /// Runs the command already split into arguments (from argv) and returns the exit status.
    func run(arguments: [String]) -> ExitStatus {
        execute(arguments, text: arguments.joined(separator: " "), location: nil)
    }

    /// Runs script lines in order, honoring the error policy; returns the most serious failure's status.
    func run(lines: some Sequence<SourceLine>) -> ExitStatus {
        var worst = ExitStatus.success
        for line in lines {
            let arguments: [String]
            do {
                arguments = try Tokenizer.split(line.text)
            } catch {
                report(ConsoleError(.usage, error.description), command: nil, location: line.location)
                worst = max(worst, .usage)
                if errorPolicy == .stop { return worst }
                continue
            }
            guard !arguments.isEmpty else { continue }
            let status = execute(arguments, text: line.text, location: line.location)
            worst = max(worst, status)
            if session.wantsToQuit || (status != .success && errorPolicy == .stop) { break }
            // Ctrl-C that the command did not take as its way to end (as --follow does) stops the script.
            if Interrupt.isPending {
                report(ConsoleError(.commandFailed, "interrupted"), command: nil, location: line.location)
                return max(worst, .commandFailed)
            }
        }
        return worst
    }

    /// The interactive console: prompt, read, run, until `quit` or end of input. Errors never end it. Lines are
    /// edited with libedit when it is installed, with history kept in `historyFile` across sessions.
    func runInteractive(historyFile: String?) -> ExitStatus {
        session.inform("admin console. Type help for commands, quit or Ctrl-D to leave.")
        // Connect now, as psql does: the prompt names the connection, and Tab can offer uids at once.
        do {
            _ = try session.store()
        } catch {
            report(ConsoleError.from(error), command: nil, location: nil)
        }
        let completer = Completer(session: session)
        let editor = LineEditor.load(historyFile: historyFile) { completer.complete(wordsBefore: $0, word: $1) }
        while !session.wantsToQuit {
            let prompt = "admin@\(session.promptName)=> "
            let text: String?
            if let editor {
                text = editor.readLine(prompt: prompt)
            } else {
                session.output.write(prompt)
                session.output.flush()
                text = readLine(strippingNewline: true)
            }
            guard let text else {
                session.output.line()
                session.output.flush()
                // Ctrl-C at the prompt abandons the line, as in psql; only Ctrl-D (end of input) leaves.
                if Interrupt.isPending {
                    Interrupt.consume()
                    continue
                }
                break
            }
            editor?.remember(text)
            do {
                let arguments = try Tokenizer.split(text)
                _ = execute(arguments, text: text, location: nil)
            } catch {
                report(ConsoleError(.usage, error.description), command: nil, location: nil)
            }
        }
        session.output.flush()
        return .success
    }

    /// Where the interactive console keeps its history: $ADMIN_HISTORY, else ~/.admin_history (like psql's
    /// PSQL_HISTORY and ~/.psql_history); none without a home directory.
    static func historyFile(environment: [String: String]) -> String? {
        if let path = environment["ADMIN_HISTORY"], !path.isEmpty { return path }
        guard let home = environment["HOME"], !home.isEmpty else { return nil }
        return home + "/.admin_history"
    }

    private func execute(_ arguments: [String], text: String, location: String?) -> ExitStatus {
        guard !arguments.isEmpty else { return .success }
        if echoesCommands {
            session.output.line(text)
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
            return .success
        } catch {
            session.output.flush()
            report(error, command: arguments[0], location: location)
            return error.status
        }
    }

    /// `admin:FILE:LINE: COMMAND: message`, the way psql names the place of a script error.
    private func report(_ error: ConsoleError, command: String?, location: String?) {
        var prefix = "admin:"
        if let location { prefix += "\(location):" }
        if let command { prefix += " \(command):" }
        session.diagnostics.line(session.colored(prefix, .red) + " " + error.message)
        session.diagnostics.flush()
    }
}

extension SourceLine {
    /// The lines of a script file (`-` for stdin), numbered for error messages.
    static func lines(ofFile path: String) throws -> [SourceLine] {
        let text: String
        if path == "-" {
            text = String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self)
        } else {
            do {
                text = try String(contentsOfFile: path, encoding: .utf8)
            } catch {
                throw ConsoleError(.commandFailed, "cannot read \(path): \(error.localizedDescription)")
            }
        }
        let name = path == "-" ? "<stdin>" : path
        return text.split(separator: "\n", omittingEmptySubsequences: false).enumerated().map { index, line in
            SourceLine(text: String(line), location: "\(name):\(index + 1)")
        }
    }

    /// Lines read from a non-terminal standard input as they arrive (a pipe from cron, a heredoc).
    static func standardInput() -> AnySequence<SourceLine> {
        var number = 0
        return AnySequence(AnyIterator {
            guard let text = readLine(strippingNewline: true) else { return nil }
            number += 1
            return SourceLine(text: text, location: "<stdin>:\(number)")
        })
    }
}
