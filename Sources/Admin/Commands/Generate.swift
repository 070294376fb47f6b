import ArgumentParser
import Foundation
import Storage

extension GeneratorOptions.Dialect: ExpressibleByArgument {}

/// `generate FILE --users N`: writes a realistic Firebase export to try the console on, test with, or benchmark.
struct Generate: ConsoleCommand {
    static let configuration = CommandConfiguration(
        commandName: "generate",
        abstract: "Write a realistic Firebase export of any size (no database needed).",
        discussion: """
            The tree is what the app would have written for N users: uids like Firebase Auth's, push-ID keys whose \
            time prefix agrees with created_at, float-second timestamps, image heights like 298.69928770517186, \
            follows with a long tail (a few users have most users as followers), likes, fan-out timelines, \
            chats with both members' copies and per-launch memberHash values, messages, and names and texts in \
            many scripts. About 3.5 KB of JSON per user: --users 58000 gives about 200 MB. It is written as a \
            stream, so memory does not grow with N, and the same --seed always gives the same bytes.

            Keys come in RTDB order and the layout is export's, so `import` then `export` of a generated file \
            gives it back byte for byte. A clean tree passes every check but chat_hash_legacy (the app never \
            wrote the stable hash). --anomalies plants about 200 violations of each check (fewer for small N: \
            5% of users or chats) and --manifest writes what `check --format json` must then report: the same \
            JSON (ok, checks with name, violations and the first 100 example paths), plus the options and the \
            rows per node.

            --dialect appcoda writes AppCoda's flat feed instead (posts/{id}: imageFileURL, timestamp in ms, \
            user, votes). FILE ending in .gz is compressed; - writes to stdout. The file is written under a \
            temporary name and renamed when complete; an existing file is only replaced with --force.

            Examples:
              generate exports/try.json --users 300
              generate big.json.gz --users 58000 --seed 7
              generate broken.json --users 2000 --anomalies --manifest broken.manifest.json
              generate feed.json --users 500 --dialect appcoda
            """)

    @Argument(help: "Where to write: a file (.gz compresses) or - for stdout.", completion: .file())
    var file: String

    @Option(help: "How many users; everything else scales with it.")
    var users: Int

    @Option(help: "The same seed always gives the same bytes.")
    var seed: UInt64 = 1

    @Option(help: "makestagram or appcoda.")
    var dialect: GeneratorOptions.Dialect = .makestagram

    @Flag(help: "Plant a known number of violations of each check (makestagram only).")
    var anomalies = false

    @Option(help: "Write the violations check must find, as check --format json prints them, to this file.")
    var manifest: String?

    @Flag(help: "Indent as the Firebase console does.")
    var pretty = false

    @Flag(help: "Replace FILE (and the manifest) if they exist.")
    var force = false

    func validate() throws {
        guard (1...GeneratorOptions.maximumUsers).contains(users) else {
            throw ValidationError("--users must be between 1 and \(GeneratorOptions.maximumUsers)")
        }
        if anomalies, dialect != .makestagram {
            throw ValidationError(
                "--anomalies plants violations of the checks, which are defined on the makestagram tree")
        }
    }

    func run(in session: Session) throws {
        let options = GeneratorOptions(
            users: users, seed: seed, dialect: dialect, plantsAnomalies: anomalies,
            output: JSONTextWriter.Options(isPretty: pretty))
        let toTerminal = file == "-" && session.output.isTerminal
        let progress =
            toTerminal
            ? nil
            : ProgressBar(
                "generate", total: session.diagnostics.isTerminal ? try ExportGenerator.estimatedBytes(options) : nil,
                session: session)
        defer { progress?.finish() }
        let generate = { (write: (UnsafeBufferPointer<UInt8>) throws -> Void) throws -> GeneratorReport in
            try ExportGenerator.write(options, onProgress: { progress?.update(done: $0) }, to: write)
        }
        // nil: `generate - | head`, the reader has what it wanted.
        guard
            let report = try OutputFile.writing(
                toFileOrStandardOutput: file, replacing: force, session: session, generate)
        else { return }
        progress?.finish()
        if let manifest {
            try OutputFile.writing(to: manifest, replacing: force) { write in
                try Array((JSONWriter.object(manifestMembers(report)) + "\n").utf8).withUnsafeBufferPointer(write)
            }
        }
        let rows = report.nodes.map { "\($0.rows) \($0.name)" }.joined(separator: ", ")
        let megabytes = Double(report.bytes) / 1_000_000
        session.inform(
            "Generated \(DomainViews.count(users, "user")) (\(dialect.rawValue), seed \(seed)): \(rows); \(report.bytes) bytes"
                + (file == "-" ? "" : " to \(file)")
                + " in \(DomainViews.duration(report.seconds)) (\(String(format: "%.1f", megabytes / max(report.seconds, 1e-9))) MB/s)."
        )
        let planted = report.violations.filter { !$0.isClean }
        if !planted.isEmpty {
            session.inform(
                "check will find: " + planted.map { "\($0.check.rawValue) \($0.violations)" }.joined(separator: ", ")
                    + (manifest.map { " (listed in \($0))" } ?? "") + ".")
        }
    }

    /// The manifest: the generator's options and rows, then `check --format json`'s members.
    private func manifestMembers(_ report: GeneratorReport) -> [(String, String)] {
        [
            ("users", String(users)), ("seed", String(seed)), ("dialect", JSONWriter.string(dialect.rawValue)),
            ("anomalies", anomalies ? "true" : "false"), ("bytes", String(report.bytes)),
            ("nodes", JSONWriter.object(report.nodes.map { ($0.name, String($0.rows)) })),
        ]
            + CheckReportView.contract(
                report.violations, verdicts: CheckReportView.verdicts(report.violations), timed: false)
    }
}
