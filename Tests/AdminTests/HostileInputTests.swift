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

/// The shapes that killed `sync` and `verify` (SIGSEGV) or took gigabytes and wrote megabyte errors, through every
/// command that reads JSON: each refuses them at Firebase's 33rd level, in bounded memory, with a short error,
/// and leaves the store as it was.
@Suite("Hostile shapes through every reader")
struct HostileShapeTests {
    /// The shapes, each written to a file by the test: 300,000 levels closed, a megabyte of `[`, 200,000
    /// unterminated `{"a":`, a leaf 100,000 levels down, and the gzip of 16 MB of `[` (16 KB).
    static func writeShapes(in directory: String) throws -> [(name: String, path: String)] {
        let shapes: [(String, String)] = [
            ("deep-closed.json", String(repeating: "[", count: 300_000) + "1" + String(repeating: "]", count: 300_000)),
            ("deep-open.json", String(repeating: "[", count: 1 << 20)),
            ("deep-objects.json", String(repeating: #"{"a":"#, count: 200_000)),
            (
                "deep-leaf.json",
                String(repeating: #"{"a":"#, count: 100_000) + "1" + String(repeating: "}", count: 100_000)
            ),
        ]
        var files: [(String, String)] = []
        for (name, text) in shapes {
            try text.write(toFile: directory + "/" + name, atomically: false, encoding: .utf8)
            files.append((name, directory + "/" + name))
        }
        let bomb = directory + "/bracket-bomb.json.gz"
        let made = try AdminProcess.runShell(
            "head -c \(16 << 20) /dev/zero | tr '\\0' '[' | gzip -c > \(bomb)", input: "", environment: [:],
            directory: directory)
        #expect(made.status == 0, "\(made.stderr)")
        files.append(("bracket-bomb.json.gz", bomb))
        return files
    }

    /// The commands that read a file, as a user runs them.
    static func readers(of path: String) -> [(name: String, arguments: [String], stdin: String?)] {
        [
            ("import", ["import", path, "--jobs", "1"], nil),
            ("import --jobs 2", ["import", path, "--jobs", "2"], nil),
            ("import -", ["import", "-"], path), ("verify", ["verify", path], nil),
            ("sync", ["sync", path, "--yes"], nil), ("sync --path", ["sync", path, "--path", "/x", "--yes"], nil),
        ]
    }

    @Test func everyReaderRefusesTheDeepShapesInBoundedMemoryAndLeavesTheStore() throws {
        let directory = try makeTemporaryDirectory("admin-deep")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let tree = #"{"kept":{"list":[1,"two",true]},"x":{"y":1}}"#
        let database = try databaseHolding(tree)
        for (name, path) in try Self.writeShapes(in: directory) {
            for reader in Self.readers(of: path) where !(reader.name == "import -" && name.hasSuffix(".gz")) {
                let measured = try AdminProcess.runMeasured(
                    ["--db", database.conninfo] + reader.arguments, inputFile: reader.stdin, directory: directory)
                let run = measured.run
                let what = "\(reader.name) \(name)"
                #expect(run.status == 1, "\(what): \(run.status) \(run.stderr.prefix(2000))")
                #expect(run.stderr.contains("deeper than Firebase's 32 levels"), "\(what): \(run.stderr.prefix(2000))")
                #expect(run.stderr.utf8.count <= 4096, "\(what): \(run.stderr.utf8.count) bytes of error")
                #expect(measured.peakMegabytes <= 128, "\(what): \(measured.peakMegabytes) MB")
            }
            // The write verbs read their JSON from a script line (an argument holds at most 128 KB).
            let json = try String(contentsOfFile: path, encoding: .isoLatin1)
            if !name.hasSuffix(".gz") {
                for verb in ["set /x", "update /x", "push /x"] {
                    let script = directory + "/write.admin"
                    let value = verb.hasPrefix("update") ? #"{"y": "# + json + "}" : json
                    try "\(verb) '\(value)'\n".write(toFile: script, atomically: false, encoding: .utf8)
                    let measured = try AdminProcess.runMeasured(
                        ["--db", database.conninfo, "-f", script], directory: directory)
                    let what = "\(verb) \(name)"
                    #expect(measured.run.status == 1, "\(what): \(measured.run.stderr.prefix(2000))")
                    #expect(measured.run.stderr.contains("deeper than Firebase's 32 levels"), "\(what)")
                    #expect(measured.run.stderr.utf8.count <= 4096, "\(what)")
                    #expect(measured.peakMegabytes <= 128, "\(what): \(measured.peakMegabytes) MB")
                }
            }
            let export = try AdminProcess.run(["--db", database.conninfo, "-q", "export", "-"])
            #expect(export.stdout == tree, "\(name)")
        }
    }
}
