import ArgumentParser
import Foundation
import Storage

/// `psql [ARGUMENTS...]`: PostgreSQL's own console on the store this console uses.
struct Psql: ConsoleCommand {
    static let configuration = CommandConfiguration(
        commandName: "psql",
        abstract: "Open psql on the same database (the embedded cluster too), for SQL by hand.",
        discussion: """
            Runs psql with this console's connection: the embedded cluster's socket (started if need be), the \
            database --db or DATABASE_URL names, or libpq's PG* environment, and a password typed for this \
            session (given to psql in its environment, never on its command line). ARGUMENTS go to psql as they \
            are (-c, -f, -X, …). psql owns the terminal until it exits; admin exits with psql's status, or a \
            script goes on. psql is found on PATH, else beside the PostgreSQL server (pg_config --bindir, \
            /usr/lib/postgresql/*/bin). At the prompt, \\! COMMAND runs any command with the same settings \
            (\\! psql, \\! pg_dump -Fc -f store.dump).

            Examples:
              psql
              psql -c 'SELECT count(*) FROM users'
              psql -X -f report.sql
            """)

    @Argument(
        parsing: .captureForPassthrough,
        help: ArgumentHelp("psql's own arguments.", valueName: "arguments"))
    var arguments: [String] = []

    func run(in session: Session) throws {
        let status = try ChildProcess.run([try Self.locate()] + arguments, settings: try session.clientEnvironment())
        guard status == 0 else { throw ConsoleError(.commandFailed, "psql exited with status \(status)") }
    }

    /// psql on PATH, else the one beside the server's programs.
    static func locate() throws(ConsoleError) -> String {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for directory in path.split(separator: ":")
        where FileManager.default.isExecutableFile(atPath: "\(directory)/psql") {
            return "\(directory)/psql"
        }
        if let binaries = try? ServerBinaries.locate(),
            FileManager.default.isExecutableFile(atPath: binaries.directory + "/psql")
        {
            return binaries.directory + "/psql"
        }
        throw ConsoleError(
            .commandFailed, "psql is not installed (Debian: apt install postgresql-client)")
    }
}
