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

    /// A device, the user's own named pipe and the console's own streams by name are written in place, with or
    /// without --force: renaming a file over them replaced `/dev/null` with a regular file when root ran
    /// `export /dev/null --force`. Reached here through a link in a directory of the test's own (and `/dev/fd/1`),
    /// so that a rename would replace the link, not the machine's device.
    /// With no FILE, export writes under ./exports/, and says so the first time it creates that directory.
    @Test func theDefaultDirectoryIsAnnouncedWhenCreated() throws {
        let database = try databaseHolding(#"{"users": {"alice": {"username": "alice"}}}"#)
        let directory = try makeTemporaryDirectory("admin-exports")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let first = try AdminProcess.run(["--db", database.conninfo, "export"], directory: directory)
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stderr.contains("Created the directory exports/ in \(directory)"), "\(first.stderr)")
        let second = try AdminProcess.run(["--db", database.conninfo, "export"], directory: directory)
        #expect(second.status == 0 && !second.stderr.contains("Created"), "\(second.stderr)")
        let files = try FileManager.default.contentsOfDirectory(atPath: directory + "/exports")
        #expect(files.count == 2 && files.allSatisfy { $0.hasPrefix("export-") && $0.hasSuffix(".json") }, "\(files)")
    }

    @Test func devicesPipesAndStreamsAreWrittenInPlace() throws {
        let database = try TestPostgres.makeDatabase()
        let db = ["--db", database.conninfo, "-q"]
        #expect(
            try AdminProcess.run(db + ["import", "-"], input: #"{"users": {"u": {"username": "you"}}}"#).status == 0)
        let expected = try AdminProcess.run(db + ["export", "-"]).stdout
        let directory = try makeTemporaryDirectory("admin-dev")
        defer { try? FileManager.default.removeItem(atPath: directory) }

        let null = directory + "/null"
        try FileManager.default.createSymbolicLink(atPath: null, withDestinationPath: "/dev/null")
        for force in [[], ["--force"]] {
            let run = try AdminProcess.run(db + ["export", null] + force)
            #expect(run.status == 0, "\(run.stderr)")
            #expect(try FileManager.default.destinationOfSymbolicLink(atPath: null) == "/dev/null")
        }
        var info = stat()
        #expect(stat("/dev/null", &info) == 0 && info.st_mode & S_IFMT == S_IFCHR)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == ["null"], "no temporary file left")

        let stream = try AdminProcess.run(db + ["export", "/dev/fd/1"])
        #expect(stream.status == 0, "\(stream.stderr)")
        #expect(stream.stdout == expected)
        // What the session printed before (here the echoed command) comes before the data on the same stream.
        let echoed = try AdminProcess.run(db + ["-e", "-c", "export /dev/fd/1"])
        #expect(echoed.stdout == "export /dev/fd/1\n" + expected, "\(echoed.stdout)")

        let pipe = directory + "/pipe"
        #expect(mkfifo(pipe, 0o600) == 0)
        let reader = Process()
        reader.executableURL = URL(fileURLWithPath: "/bin/cat")
        reader.arguments = [pipe]
        let output = Pipe()
        reader.standardOutput = output
        try reader.run()
        let written = try AdminProcess.run(db + ["export", pipe])
        let read = output.fileHandleForReading.readDataToEndOfFile()
        reader.waitUntilExit()
        #expect(written.status == 0, "\(written.stderr)")
        #expect(String(decoding: read, as: UTF8.self) == expected)
        #expect(lstat(pipe, &info) == 0 && info.st_mode & S_IFMT == S_IFIFO, "the pipe is still a pipe")

        let refused = try AdminProcess.run(db + ["export", directory])
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("it is a directory"), "\(refused.stderr)")
    }
}
