import ArgumentParser

/// What the console does when a command of a script fails.
enum ErrorPolicy: String, ExpressibleByArgument, CaseIterable {
    /// Stop at the first failing command and exit with its status (psql's ON_ERROR_STOP).
    case stop
    /// Run the remaining commands; exit with the most serious failure's status.
    case `continue`
}

/// Options that apply to the whole console run, given before the command.
struct GlobalOptions: ParsableArguments {
    @Option(
        name: .customLong("db"),
        help: ArgumentHelp(
            "libpq connection string or postgresql:// URI.",
            discussion: "Default: $DATABASE_URL, then libpq's PG* variables, then the embedded local cluster.",
            valueName: "conninfo"))
    var database: String?

    @Option(
        name: .customLong("data-dir"),
        help: ArgumentHelp(
            "Directory of the embedded cluster (default: $ADMIN_DATA_DIR, then a per-user data directory).",
            valueName: "dir"),
        completion: .directory)
    var dataDirectory: String?

    @Flag(
        name: .customLong("no-migrate"),
        help: "Do not migrate the embedded cluster on first use (other databases change only by migrate).")
    var skipMigrations = false

    @Option(
        name: .customShort("c"), parsing: .singleValue,
        help: ArgumentHelp(
            "Run this console command (repeatable), then exit.", valueName: "command"))
    var commands: [String] = []

    @Option(
        name: .customShort("f"),
        help: ArgumentHelp(
            "Run the commands in this file (- for standard input), then exit.", valueName: "file"),
        completion: .file())
    var file: String?

    @Option(name: .customLong("on-error"), help: "What a script does after a failing command: stop or continue.")
    var onError: ErrorPolicy = .stop

    @Option(name: .customLong("format"), help: "Output format.")
    var format: OutputFormat = .table

    @Flag(
        name: [.customShort("q"), .customLong("quiet")], help: "Print no informational messages, only data and errors.")
    var quiet = false

    @Flag(name: [.customShort("e"), .customLong("echo")], help: "Print each command before running it.")
    var echo = false

    @Flag(name: [.customShort("W"), .customLong("password")], help: "Ask for the password before connecting.")
    var promptsForPassword = false

    @Flag(
        name: [.customShort("X"), .customLong("no-rc")],
        help: ArgumentHelp(
            "Do not read the startup file (~/.adminrc, or $ADMINRC).",
            discussion:
                "The startup file holds console lines run before anything else, such as \\set format expanded or \\timing on."
        ))
    var skipsStartupFile = false
}
