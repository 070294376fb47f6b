import Foundation
import PostgresTestSupport
import Testing

/// Every console example in README.md and in docs/, run in order as a new user runs them from the repository's root: `admin`
/// on the PATH, the embedded cluster (its own, in a scratch directory), the sample exports. A `$` line runs in
/// bash and must exit 0, or with the status its comment names ("exit status 3"); the lines below it, when the
/// README shows any, must be what it printed (stdout and stderr as a terminal shows them, in one stream). An `admin@embedded=>` block is typed into one
/// console. So the README cannot go stale.
@Suite("The README's examples")
struct ReadmeTests {
    @Test func everyConsoleExampleRuns() throws {
        let readme = try String(contentsOf: Repository.url("README.md"), encoding: .utf8)
        let blocks = ReadmeExample.blocks(in: readme)
        // The tour; the rest is in docs/.
        #expect(blocks.count >= 4)
        try Self.run(blocks)
    }

    /// The pages of docs/, each from a fresh scratch directory and cluster of its own.
    static let documents: [String] = {
        let directory = Repository.url("docs")
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return names.filter { $0.hasSuffix(".md") }.sorted()
    }()

    @Test(arguments: documents)
    func everyConsoleExampleOfTheDocsRuns(_ name: String) throws {
        let text = try String(contentsOf: Repository.url("docs/" + name), encoding: .utf8)
        let blocks = ReadmeExample.blocks(in: text)
        #expect(!blocks.isEmpty, "docs/\(name) has no console example")
        try Self.run(blocks)
    }

    /// Runs `blocks` in order, in a scratch directory and embedded cluster of their own.
    private static func run(_ blocks: [ReadmeExample.Block]) throws {
        let scratch = try ReadmeScratch()
        defer { scratch.remove() }
        var keys = PushIDBindings()
        for block in blocks {
            if block.isConsoleSession {
                try scratch.runSession(block, keys: &keys)
                continue
            }
            for example in block.examples {
                try scratch.run(example, keys: &keys)
            }
        }
    }

    @Test func theMatcherHoldsOutputToTheExample() {
        var keys = PushIDBindings()
        let example = ReadmeExample(
            command: "admin x", expectedStatus: 0,
            output: [
                " key   | -P7NaBGsi4Ks0HRDBDwg", "...", "Exported 12 rows in 0.094 s (2.1 MB/s).",
                "(… rows)",
            ])
        let actual = " key | -P8AAAAAAAAAAAAAAAAA\n a\n b\nExported 12 rows in 45.7 ms (9.0 MB/s).\n(7 rows)\n"
        #expect(example.matches(actual, keys: &keys))
        #expect(keys.replacing(in: "like alice -P7NaBGsi4Ks0HRDBDwg") == "like alice -P8AAAAAAAAAAAAAAAAA")
        #expect(!example.matches(actual.replacingOccurrences(of: "12 rows", with: "13 rows"), keys: &keys))
        // A push ID may hold "--", which is no table rule to narrow.
        var fresh = PushIDBindings()
        #expect(
            example.matches(
                actual.replacingOccurrences(of: "-P8AAAAAAAAAAAAAAAAA", with: "-P8AAAAAAAAAAAAAAA--"), keys: &fresh))
        #expect(fresh.bound["-P7NaBGsi4Ks0HRDBDwg"] == "-P8AAAAAAAAAAAAAAA--")
        #expect(
            !example.matches(
                actual.replacingOccurrences(of: "-P8AAAAAAAAAAAAAAAAA", with: "-P9AAAAAAAAAAAAAAAAA"), keys: &keys),
            "a key once bound stays bound")
    }
}

/// A README example: a command (or a line typed at the console's prompt) and what the README shows it printing.
struct ReadmeExample {
    var command: String
    var expectedStatus: Int32
    /// The lines shown below it; `...` stands for any lines, `…` within a line for any text.
    var output: [String]

    /// A ```console block: its examples, and whether they are typed at the console's prompt.
    struct Block {
        var examples: [ReadmeExample] = []
        var isConsoleSession = false
    }

    static let prompt = "admin@embedded=> "

    /// The README's ```console blocks, in order.
    static func blocks(in readme: String) -> [Block] {
        var blocks: [Block] = []
        var current: Block?
        for line in readme.components(separatedBy: "\n") {
            if current == nil {
                if line == "```console" { current = Block() }
                continue
            }
            if line == "```" {
                blocks.append(current!)
                current = nil
            } else if line.hasPrefix("$ ") || line.hasPrefix(prompt) {
                let isPrompt = line.hasPrefix(prompt)
                current!.isConsoleSession = isPrompt
                let text = String(line.dropFirst(isPrompt ? prompt.count : 2))
                // A comment is set off by two spaces or more: `$ admin check    # exit status 3`.
                let comment = text.firstMatch(of: /\s{2,}#\s.*$/)
                let status = comment.flatMap { $0.0.firstMatch(of: /exit status (\d+)/) }.flatMap { Int32($0.1) }
                current!.examples.append(
                    ReadmeExample(
                        command: comment.map { String(text[..<$0.range.lowerBound]) } ?? text,
                        expectedStatus: status ?? 0, output: []))
            } else if !current!.examples.isEmpty {
                current!.examples[current!.examples.count - 1].output.append(line)
            }
        }
        return blocks
    }

    /// Whether `actual` is what the README shows, durations, rates and times aside; push IDs the README shows
    /// where `actual` has new ones (a post just created) are bound to them for the examples that follow.
    func matches(_ actual: String, keys: inout PushIDBindings) -> Bool {
        var pattern = "^"
        var groups: [String] = []
        for line in output.map(Self.normalized) {
            if line == "..." {
                pattern += "(?:[^\\n]*\\n)*?"
                continue
            }
            var rest = line[...]
            while let match = rest.firstMatch(of: PushIDBindings.pushID) {
                let found = match.output.1
                pattern += Self.escaped(rest[..<found.startIndex])
                let key = String(found)
                if let bound = keys.bound[key] {
                    pattern += NSRegularExpression.escapedPattern(for: bound)
                } else {
                    pattern += "(-[0-9A-Za-z_-]{19})"
                    groups.append(key)
                }
                rest = rest[found.endIndex...]
            }
            pattern += Self.escaped(rest) + "\\n"
        }
        pattern += "$"
        let text = Self.normalized(actual)
        guard let expression = try? NSRegularExpression(pattern: pattern),
            let match = expression.firstMatch(in: text, range: NSRange(text.startIndex..., in: text))
        else { return false }
        for (index, key) in groups.enumerated() {
            if let range = Range(match.range(at: index + 1), in: text) { keys.bound[key] = String(text[range]) }
        }
        return true
    }

    private static func escaped(_ text: Substring) -> String {
        text.components(separatedBy: "…").map { NSRegularExpression.escapedPattern(for: $0) }.joined(
            separator: "[^\\n]*?")
    }

    /// Text with what differs from run to run masked (durations, rates, times), and table layout reduced to
    /// its cells, so that a column as wide as today's figures is no difference.
    static func normalized(_ text: String) -> String {
        text.components(separatedBy: "\n").map { line in
            // A table's rule is as wide as its columns; a push ID may hold "--" (-P7Nvjd689W99Ur2Md--).
            guard !line.contains(/^[-+]+$/) else { return line.replacing(/-{2,}/, with: "-") }
            return line.replacing(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z/, with: "‹time›")
                .replacing(/\b1\d{9}(\.\d+)?\b/, with: "‹time›")
                .replacing(/export-\d{8}-\d{6}/, with: "export-‹time›")
                .replacing(/\b\d+(\.\d+)? (ms|s)\b/, with: "‹duration›")
                .replacing(/\b\d+(\.\d+)? MB\/s\b/, with: "‹rate› MB/s")
                .replacing(/\b\d+ rows\/s\b/, with: "‹rate› rows/s")
                .replacing(/\b\d+\.\d{3}\b/, with: "‹duration›")
                .replacing(/[ ]{2,}/, with: " ")
                .replacing(/[ ]+$/, with: "")
        }.joined(separator: "\n")
    }
}

/// Push IDs the README shows (`-P7NaBGsi4Ks0HRDBDwg`) and the ones the run made in their place.
struct PushIDBindings {
    /// A push ID (the second capture) that is a word of its own.
    static var pushID: Regex<(Substring, Substring)> { /(?:^|[^0-9A-Za-z_-])(-[0-9A-Za-z_-]{19})(?![0-9A-Za-z_-])/ }
    var bound: [String: String] = [:]

    /// `command` with the README's push IDs replaced by the run's.
    func replacing(in command: String) -> String {
        command.replacing(Self.pushID) { match in
            let key = match.output.1
            return String(match.output.0[..<key.startIndex]) + (bound[String(key)] ?? String(key))
        }
    }
}

/// A scratch directory laid out as the repository's root for the examples: the sample exports, `admin` on the
/// PATH, an embedded cluster of its own, a home of its own (no ~/.adminrc, no history).
struct ReadmeScratch {
    let directory: String
    private let environment: [String: String]

    init() throws {
        directory = try makeTemporaryDirectory("admin-readme")
        let bin = directory + "/.bin"
        try FileManager.default.createDirectory(atPath: directory + "/exports", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
        let exports = Repository.url("exports")
        for sample in try FileManager.default.contentsOfDirectory(atPath: exports.path)
        where sample.hasPrefix("sample-") {
            try FileManager.default.copyItem(
                at: exports.appendingPathComponent(sample).resolvingSymlinksInPath(),
                to: URL(fileURLWithPath: directory + "/exports/" + sample))
        }
        try FileManager.default.createSymbolicLink(
            atPath: bin + "/admin", withDestinationPath: AdminProcess.executable.path)
        environment = AdminProcess.environment([
            "PATH": bin + ":/usr/local/bin:/usr/bin:/bin", "HOME": directory, "ADMIN_DATA_DIR": directory + "/data",
            "ADMIN_HISTORY": directory + "/.admin_history", "COLUMNS": "120",
        ])
    }

    func remove() {
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Runs one `$` example in bash; `--follow` ones are ended with Ctrl-C after two seconds.
    func run(_ example: ReadmeExample, keys: inout PushIDBindings, sourceLocation: SourceLocation = #_sourceLocation)
        throws
    {
        let command = keys.replacing(in: example.command)
        let run = try shell(command, input: "", interruptAfter: command.contains("--follow") ? 2 : nil)
        check(example, command: command, run: run, actual: run.stdout, keys: &keys)
    }

    /// Types a console block's lines into one console (`--echo` marks where each one's output begins).
    func runSession(_ block: ReadmeExample.Block, keys: inout PushIDBindings) throws {
        let lines = block.examples.map { keys.replacing(in: $0.command) }
        let run = try shell("admin --echo", input: lines.joined(separator: "\n") + "\n", interruptAfter: nil)
        #expect(run.status == 0, "the console session ended with \(run.status): \(run.stdout)")
        // Each line's output: from its echo to the next line's.
        var outputs: [String] = []
        for line in run.stdout.components(separatedBy: "\n").dropLast() {
            if outputs.count < lines.count, line == lines[outputs.count] {
                outputs.append("")
            } else if !outputs.isEmpty {
                outputs[outputs.count - 1] += line + "\n"
            }
        }
        #expect(outputs.count == lines.count, "the console echoed \(outputs.count) of \(lines.count) lines")
        for (example, output) in zip(block.examples, outputs) where !example.output.isEmpty {
            check(example, command: example.command, run: run, actual: output, keys: &keys)
        }
    }

    private func check(
        _ example: ReadmeExample, command: String, run: AdminRun, actual: String, keys: inout PushIDBindings
    ) {
        #expect(
            run.status == example.expectedStatus,
            "README: `\(command)` exited \(run.status), not \(example.expectedStatus):\n\(run.stdout)\(run.stderr)")
        guard !example.output.isEmpty else { return }
        let shown = actual.replacingOccurrences(of: directory + "/data", with: "/var/lib/makestagram-admin")
        #expect(
            example.matches(shown, keys: &keys),
            """
            README: `\(command)` printed what the README does not show.
            The README shows:
            \(example.output.joined(separator: "\n"))
            It printed:
            \(shown)
            """)
    }

    private func shell(_ command: String, input: String, interruptAfter seconds: TimeInterval?) throws -> AdminRun {
        // One stream for both, as a terminal shows them: the messages where they come among the data.
        try AdminProcess.runShell(
            "exec 2>&1; " + command, input: input, environment: environment, directory: directory,
            interruptAfter: seconds)
    }
}
