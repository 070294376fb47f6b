import Foundation
import PostgresTestSupport
import Testing
import TreeTestSupport

/// Scripts replayed through the console against `Transcripts/tree.json`, their stdout and stderr compared with
/// the reviewed `NAME.out` and `NAME.err` beside them. After a deliberate change of output, regenerate them with
/// `ADMIN_RECORD_TRANSCRIPTS=1 swift test --filter TranscriptTests` and review the diff.
@Suite("Transcripts")
struct TranscriptTests {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().path
    static let transcripts = ((try? FileManager.default.contentsOfDirectory(atPath: directory + "/Transcripts")) ?? [])
        .filter { $0.hasSuffix(".script") }.map { String($0.dropLast(".script".count)) }.sorted()

    /// Options a transcript runs with, besides -q and -f.
    static let options: [String: [String]] = [
        "errors": ["--on-error", "continue"], "keys": ["--on-error", "continue"], "writes": ["--on-error", "continue"],
        "firebase": ["--on-error", "continue"],
    ]
    /// The exit status each transcript ends with.
    static let statuses: [String: Int32] = ["errors": 64, "firebase": 64, "formats": 3, "keys": 64, "writes": 1]

    @Test func thereAreTranscripts() {
        #expect(Self.transcripts.count >= 2)
    }

    @Test(arguments: transcripts)
    func transcript(_ name: String) throws {
        let database = try TestPostgres.makeDatabase()
        let tree = try String(contentsOfFile: Self.directory + "/Transcripts/tree.json", encoding: .utf8)
        let load = try AdminProcess.run(["--db", database.conninfo, "-q", "import", "-"], input: tree)
        #expect(load.status == 0, "\(load.stderr)")
        let run = try AdminProcess.run(
            ["--db", database.conninfo, "-q"] + (Self.options[name] ?? []) + ["-f", "Transcripts/\(name).script"],
            directory: Self.directory)
        #expect(run.status == Self.statuses[name] ?? 0, "\(run.stderr)")
        // Durations differ from run to run: `check --format json`'s seconds are masked.
        func masked(_ text: String) -> String { text.replacing(/"seconds": [0-9.e+-]+/, with: "\"seconds\": …") }
        for (suffix, text) in [("out", masked(run.stdout)), ("err", run.stderr)] {
            let path = Self.directory + "/Transcripts/\(name).\(suffix)"
            if ProcessInfo.processInfo.environment["ADMIN_RECORD_TRANSCRIPTS"] == "1" {
                try text.write(toFile: path, atomically: true, encoding: .utf8)
            }
            let expected = try String(contentsOfFile: path, encoding: .utf8)
            #expect(text == expected, "\(name).\(suffix) differs; first difference: \(firstDifference(text, expected))")
        }
    }
}
