import Foundation
import PostgresTestSupport
import Testing

private let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("HostileInputs")

/// What `expected.json` says about one file.
private struct Expectation: Decodable {
    var exit: Int32
    var stderr: [String]
    /// The export after a successful import.
    var export: String?
}

@Suite("Hostile inputs")
struct HostileInputTests {
    /// Every file of the corpus: the expected exit status and message, no crash, and after a failure the store
    /// exactly as it was.
    @Test func everyHostileFileHasItsExpectedOutcomeAndAFailureChangesNothing() throws {
        let expectations = try JSONDecoder().decode(
            [String: Expectation].self, from: Data(contentsOf: corpus.appendingPathComponent("expected.json")))
        let committed = try FileManager.default.contentsOfDirectory(atPath: corpus.path)
            .filter { $0 != "expected.json" && $0 != "README.md" }
        // Each committed file has an expectation, and each expectation a file (or a recipe below).
        #expect(Set(committed) == Set(expectations.keys.filter { !$0.contains("(made by the test)") }))

        let directory = try makeTemporaryDirectory("admin-hostile")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var files = committed.map { (name: $0, path: corpus.appendingPathComponent($0).path) }
        let longString = directory + "/string-20-mb.json"
        var text = Data(#"{"users": {"u1": {"username": ""#.utf8)
        text.append(Data(repeating: UInt8(ascii: "x"), count: 20 << 20))
        text.append(Data(#""}}}"#.utf8))
        try text.write(to: URL(fileURLWithPath: longString))
        files.append((name: "string-20-mb (made by the test)", path: longString))

        let database = try TestPostgres.makeDatabase()
        let baseline = #"{"kept":{"list":[1,"two",true],"text":"ünïcode"}}"#
        for file in files.sorted(by: { $0.name < $1.name }) {
            let expected = try #require(expectations[file.name], "\(file.name)")
            let reset = try AdminProcess.run(["--db", database.conninfo, "-q", "import", "-"], input: baseline)
            #expect(reset.status == 0, "\(reset.stderr)")
            // In the temporary directory: rejected values go to FILE.rejects.jsonl in the working directory.
            let run = try AdminProcess.run(["--db", database.conninfo, "import", file.path], directory: directory)
            #expect(run.status == expected.exit, "\(file.name): \(run.stderr)")
            for needle in expected.stderr {
                #expect(run.stderr.contains(needle), "\(file.name): \(run.stderr)")
            }
            if expected.exit != 0 {
                #expect(run.stderr.contains("import rolled back"), "\(file.name): \(run.stderr)")
                #expect(run.stdout.isEmpty, "\(file.name)")
            }
            let export = try AdminProcess.run(["--db", database.conninfo, "-q", "export", "-"])
            #expect(export.stdout == (expected.export ?? baseline), "\(file.name)")
        }
    }
}
