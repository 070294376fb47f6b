import Foundation
import PostgresTestSupport
import Testing

/// `psql` and `\!` reach the database the console uses, with its settings in libpq's environment, and fail with
/// the program's status.
@Suite("psql and \\!")
struct PsqlTests {
    @Test func psqlAndTheShellEscapeUseTheConsolesDatabase() throws {
        let database = try databaseHolding(#"{"users": {"alice": {"username": "alice"}}}"#)
        let db = ["--db", database.conninfo]
        // psql's own options, -q and -c included, are psql's.
        let count = try AdminProcess.run(db + ["psql", "-X", "-q", "-tA", "-c", "SELECT count(*) FROM users"])
        #expect(count.status == 0 && count.stdout == "1\n", "\(count.stdout)\(count.stderr)")
        let failing = try AdminProcess.run(db + ["psql", "-X", "-v", "ON_ERROR_STOP=1", "-c", "SELECT nope"])
        #expect(failing.status == 1 && failing.stderr.contains("psql exited with status 1"), "\(failing.stderr)")

        // In a script: \! runs a command with the same settings (psql here), and a failing one fails the line.
        let script = """
            \\! psql -X -tA -c 'SELECT username FROM users'
            \\!psql -X -tA -c 'SELECT 40 + 2'
            \\! exit 4
            """
        let run = try AdminProcess.run(db + ["-f", "-"], input: script)
        #expect(run.stdout == "alice\n42\n", "\(run.stdout)\(run.stderr)")
        #expect(run.status == 1 && run.stderr.contains("\\! exited with status 4"), "\(run.stderr)")
    }
}
