import ArgumentParser
import Foundation
import Storage

/// `admin`: the console for the app's data on PostgreSQL. With a command, runs it and exits; with `-c` or `-f`,
/// runs those; with neither, starts the interactive console on a terminal or reads commands from stdin.
@main
struct AdminMain: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "admin",
        abstract: "Operate the app's Firebase data on PostgreSQL: import, export, check, repair, inspect.",
        usage: """
            admin [options] [command [arguments...]]
            admin [options] -c COMMAND [-c COMMAND...]
            admin [options] -f FILE
            """,
        discussion: """
            Without a command, admin starts an interactive console on a terminal, and otherwise reads commands from standard input, one per line (a line starting with # is a comment).

            \(Help.overview)
            The database is --db, else $DATABASE_URL, else libpq's PG* variables (PGHOST, PGSERVICE, ...). With none of them, admin runs a private PostgreSQL cluster in --data-dir, $ADMIN_DATA_DIR or a per-user data directory, created on first use and reachable only through its own Unix socket.

            \(ExitStatus.documentation)
            """,
        version: version)

    /// The console's version, as `--version` prints it and `check --record` keeps it.
    static let version = "0.1.0"

    @OptionGroup var options: GlobalOptions

    /// Parses `admin`'s arguments with its own options lifted from after the command (psql takes them anywhere),
    /// then runs.
    static func main() {
        let arguments = Array(CommandLine.arguments.dropFirst())
        if let text = packagingOutput(for: arguments) {
            print(text, terminator: text.hasSuffix("\n") ? "" : "\n")
            return
        }
        main(CommandSpec.liftingGlobalOptions(arguments))
    }

    /// What the packaging options print: `--generate-manual` (admin(1) in troff) and
    /// `--generate-completion-script SHELL` (bash, zsh or fish); nil for other arguments.
    static func packagingOutput(for arguments: [String]) -> String? {
        switch arguments {
        case ["--generate-manual"]: ManualPage.troff
        case let options where options.count == 2 && options[0] == "--generate-completion-script":
            CompletionScript.script(for: options[1])
        default: nil
        }
    }

    @Argument(parsing: .captureForPassthrough, help: "A command and its arguments (see the list above).")
    var command: [String] = []

    func validate() throws {
        if !command.isEmpty && (!options.commands.isEmpty || options.file != nil) {
            throw ValidationError("Give a command, or -c/-f, not both.")
        }
    }

    func run() throws {
        // Options before the command are captured with it when the parser cannot place them (--help, typos).
        if let first = command.first, first.hasPrefix("-") {
            if first == "--help" || first == "-h" {
                print(Self.helpMessage())
                return
            }
            if first == "--version" {
                print(Self.configuration.version)
                return
            }
            throw ValidationError("Unknown option '\(first)'.")
        }
        signal(SIGPIPE, SIG_IGN)
        Interrupt.install()
        let session = Session(
            target: DatabaseTarget.resolve(options: options, environment: ProcessInfo.processInfo.environment),
            migratesOnConnect: !options.skipMigrations, format: options.format, isQuiet: options.quiet)
        let loop = MainLoop(session: session, errorPolicy: options.onError, echoesCommands: options.echo)
        session.asksForConfirmation =
            options.commands.isEmpty && options.file == nil
            && isatty(STDIN_FILENO) == 1 && isatty(STDERR_FILENO) == 1
        session.isInteractive =
            options.commands.isEmpty && options.file == nil
            && (!command.isEmpty || isatty(STDIN_FILENO) == 1)
        session.promptsForPassword = options.promptsForPassword
        if let database = options.database, Store.settings(ofConninfo: database)?["password"]?.isEmpty == false {
            session.warn(
                "a password given in --db is visible to every user of this machine (ps, /proc); put it in "
                    + "~/.pgpass (or the file PGPASSFILE names), or in PGPASSWORD, or type it after -W")
        }
        if !options.skipsStartupFile { loop.runStartupFile(environment: ProcessInfo.processInfo.environment) }
        let status: ExitStatus
        if !command.isEmpty {
            status = loop.run(arguments: command)
        } else if !options.commands.isEmpty || options.file != nil {
            let commands = AnySequence(options.commands.map { SourceLine(text: $0, location: nil) })
            var lines = commands
            if let file = options.file {
                do {
                    lines = AnySequence([commands, AnySequence(try SourceLine.lines(ofFile: file))].joined())
                } catch {
                    session.diagnostics.line("admin: \(error)")
                    session.diagnostics.flush()
                    throw ExitCode(ExitStatus.commandFailed.rawValue)
                }
            }
            status = loop.run(lines: lines)
        } else if isatty(STDIN_FILENO) == 1 {
            status = loop.runInteractive(
                historyFile: MainLoop.historyFile(environment: ProcessInfo.processInfo.environment))
        } else {
            status = loop.run(lines: try SourceLine.lines(ofFile: "-"))
        }
        session.close()
        if status != .success {
            throw ExitCode(status.rawValue)
        }
    }
}
