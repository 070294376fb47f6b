import Foundation
import PostgresTestSupport
import Testing

@Suite("export command")
struct ExportCommandTests {
    /// `--jobs` gives the same bytes with one session or several, and refuses nonsense before connecting.
    @Test func jobsGiveTheSameBytesAndZeroIsRefused() throws {
        let database = try TestPostgres.makeDatabase()
        let db = ["--db", database.conninfo]
        let tree =
            #"{"chats": {"a": {"c": {"title": "t"}}}, "users": {"0": {"username": "zero"}, "1": {"username": "one"}}, "zz": 1}"#
        #expect(try AdminProcess.run(db + ["-q", "import", "-"], input: tree).status == 0)
        let one = try AdminProcess.run(db + ["-q", "export", "-", "--jobs", "1"])
        #expect(one.status == 0, "\(one.stderr)")
        #expect(one.stdout.contains(#""users":[{"username":"zero"},{"username":"one"}]"#), "\(one.stdout)")
        for jobs in ["2", "4"] {
            let many = try AdminProcess.run(db + ["-q", "export", "-", "--jobs", jobs, "--pretty"])
            let pretty = try AdminProcess.run(db + ["-q", "export", "-", "--jobs", "1", "--pretty"])
            #expect(many.status == 0, "\(many.stderr)")
            #expect(many.stdout == pretty.stdout)
            #expect(try AdminProcess.run(db + ["-q", "export", "-", "--jobs", jobs]).stdout == one.stdout)
        }
        let zero = try AdminProcess.run(db + ["export", "-", "--jobs", "0"])
        #expect(zero.status == 64)
        #expect(zero.stderr.contains("--jobs must be 1 or more"), "\(zero.stderr)")
    }
}
