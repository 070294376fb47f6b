import ArgumentParser
import Foundation
import Storage

/// `verify SOURCE`: whether the store holds exactly what a Firebase export holds; exits 3 when it does not.
struct Verify: ConsoleCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Prove a migration: compare the store with the Firebase export it came from (exit 3 on differences).",
        discussion: """
            Compares the store with SOURCE path by path, as export would write the store and import would read the \
            file: arrays are integer-keyed objects, nulls and empty objects do not exist, numbers are doubles (1 \
            equals 1.0), key order and formatting do not matter, and priorities count unless --ignore-priorities. \
            Both sides stream, so memory stays bounded at any size. Read-only: it writes nothing, runs with a role \
            that may only SELECT, and reads the store from one snapshot.

            SOURCE is a file, a .gz file, or - for stdin, as import takes it. --path compares the node at that \
            path with a SOURCE that is an export of that node alone (as import --at takes it). Its keys may come in \
            any order: one pass suffices when each object's keys come in RTDB order (integer keys first), as the \
            Firebase console and admin export write them; an export a script wrote (Python's json.dump, jq -S, \
            sort_keys) is sorted first, with temporary files in --temp-dir of about three times its size, then \
            compared (--sort sorts without trying one pass). Stdin is copied to --temp-dir as it is read, in case \
            it must be read again (not with --sort). A key repeated in one object counts with its last \
            occurrence, as import keeps it.

            Each difference is one row, in RTDB order of path:
              missing   in SOURCE, not in the store (the shallowest such path)
              extra     in the store, not in SOURCE (the shallowest such path)
              changed   a leaf whose values differ, or a leaf on one side and an object on the other
              rejected  in SOURCE only, because import refuses it (the reason is given): it never reached the store
            For example, after `set /users/u1/username "Al"` on a store imported from export.json:
              path                 kind     source  store
              /users/u1/username   changed  "Alice" "Al"

            --max-differences lists at most N (the rest are counted). --format json prints one document:
              {"equal": false, "differences": [{"path", "kind", "source", "store"}...], "summary": {...}}

            --only NODE,… compares only those top-level nodes, --exclude NODE,… all but those (as pg_restore -t \
            selects tables): the others are left out on both sides. Not with --path.

            --max-rejects N accepts up to N rejected values, as import and sync let them through: the recipe's \
            verify after a sync --max-rejects 100 takes the same option.

            Exit status: 0 when equal (or different only in the rejected values --max-rejects accepts), 3 when \
            they differ, 1 on an error reading either side, 2 when the database cannot be reached.

            Examples:
              verify export.json
              verify export.json.gz --max-differences 20
              verify posts.json --path /posts
              verify export.json --max-rejects 100
              verify export.json --only users,posts
              verify scripted-export.json --sort --temp-dir /var/tmp
              gunzip -c export.json.gz | admin verify - --format json
            """)

    @Argument(
        help: "The Firebase export to compare with: a file, a .gz file, or - for stdin.", completion: .file())
    var file: String

    @Option(help: "Compare the node at this Firebase path (SOURCE is an export of that node).")
    var path = "/"

    @Flag(help: "Leave priorities out of the comparison.")
    var ignorePriorities = false

    @Option(help: "List at most this many differences (all are counted).")
    var maxDifferences = 1000

    @Option(help: "Output format (default: the session's).")
    var format: OutputFormat?

    @OptionGroup var nodes: TopLevelOptions

    @Option(
        help: ArgumentHelp(
            "Accept up to N rejected values: listed, but not a difference that fails verify.",
            discussion: "The values import and sync left out under the same --max-rejects (their rejects file).",
            valueName: "n"))
    var maxRejects = 0

    @Flag(help: "Sort SOURCE first, without trying one pass (for an export known to be out of RTDB order).")
    var sort = false

    @Option(
        name: .customLong("temp-dir"),
        help: ArgumentHelp(
            "Where to keep temporary files when SOURCE must be sorted (default: $TMPDIR or /tmp).", valueName: "dir"),
        completion: .directory)
    var temporaryDirectoryOption: String?

    /// `--temp-dir`, else `$TMPDIR`, else /tmp (an optional, so that the help says so once).
    private var temporaryDirectory: String { temporaryDirectoryOption ?? TreeSorter.defaultTemporaryDirectory }

    func validate() throws {
        guard maxDifferences >= 0 else { throw ValidationError("--max-differences must be 0 or more") }
        guard maxRejects >= 0 else { throw ValidationError("--max-rejects must be 0 or more") }
        _ = try FirebasePath.keys(of: path)
        try nodes.validate(path: path)
    }

    func run(in session: Session) throws {
        let input = try InputFile(path: file)
        defer { input.close() }
        let store = try session.store()
        let keys = try FirebasePath.keys(of: path)
        let source = ComparedInput(
            input, name: file, command: "verify", sortsFirst: sort, temporaryDirectory: temporaryDirectory,
            session: session)
        defer { source.progress?.finish() }
        let report = try store.verify(
            opening: source.open,
            options: VerifyOptions(
                at: keys, ignoringPriorities: ignorePriorities, maxListed: maxDifferences, sortingFirst: sort,
                temporaryDirectory: temporaryDirectory, topLevel: nodes.selection))
        source.progress?.finish()
        let format = format ?? session.format
        let isAccepted = isAccepted(report)
        if format == .json {
            session.output.line(Self.json(report, isAccepted: isAccepted))
        } else {
            if !report.differences.isEmpty {
                session.show(DifferenceViews.table(report.differences, format: format), as: format)
            }
            // The summary is a diagnostic (stderr, escaped: it names top-level keys; none with --quiet), as
            // import's and sync's are. Differences are summed up by the error line, once.
            if format != .csv, isAccepted { session.inform(summary(report)) }
        }
        guard isAccepted else { throw ConsoleError(.violationsFound, summary(report)) }
    }

    /// Whether the store holds what SOURCE does but for at most --max-rejects rejected values, which import and
    /// sync left out (the cut-over recipe's nightly verify accepts what its sync accepted).
    private func isAccepted(_ report: VerifyReport) -> Bool {
        let rejected = report.counts[.rejected] ?? 0
        return report.differenceCount == rejected && rejected <= maxRejects
    }

    private func summary(_ report: VerifyReport) -> String {
        let rate = report.seconds > 0 ? Double(report.sourceBytes) / 1_000_000 / report.seconds : 0
        let timing = DomainViews.duration(report.seconds) + String(format: ", %.1f MB/s", rate)
        let compared = "\(DomainViews.count(report.nodesCompared, "node")) compared"
        let sorted =
            sort
            ? " \(file) was sorted first (--sort)."
            : report.sortedBecause.map { " \(file) was sorted first, because \($0)." } ?? ""
        guard !report.isEqual else { return "The store and \(file) are equal: \(compared) (\(timing)).\(sorted)" }
        if isAccepted(report) {
            return
                "The store and \(file) are equal but for \(DomainViews.count(report.differenceCount, "rejected value")) "
                + "(--max-rejects \(maxRejects)): \(compared) (\(timing)).\(sorted)"
        }
        var text =
            "the store differs from \(file) in \(DomainViews.count(report.differenceCount, "place")) "
            + "\(Self.whereDifferent(report)); \(compared) (\(timing))."
        if report.differences.count < report.differenceCount {
            text +=
                " The first \(report.differences.count) are listed ("
                + (report.isListCutForMemory ? "all the list's memory holds" : "--max-differences") + ")."
        }
        return text + sorted
    }

    /// "(3 missing, 2 extra) under /chats: 2, /messages: 3", the first `namedChildren` children named and the
    /// rest counted ("and 1,999,990 more under 1,999,990 other nodes").
    private static func whereDifferent(_ report: VerifyReport) -> String {
        let kinds = TreeDifference.Kind.allCases.compactMap { kind in
            report.counts[kind].map { "\($0) \(kind.rawValue)" }
        }
        let children = countsByChild(report)
        var nodes = children.prefix(namedChildren).map { "\($0.path): \($0.count)" }
        let others = (
            differences: children.dropFirst(namedChildren).reduce(report.otherChildren.differences) { $0 + $1.count },
            children: max(0, children.count - namedChildren) + report.otherChildren.children
        )
        if others.children > 0 {
            nodes.append(
                "and \(others.differences) more under "
                    + DomainViews.count(others.children, "other node"))
        }
        return "(\(kinds.joined(separator: ", "))) under \(nodes.joined(separator: ", "))"
    }

    /// Children the summary names; the JSON's `by_node` names up to a thousand.
    private static let namedChildren = 10

    /// The differences under each child of the verified node, in RTDB order of its path.
    private static func countsByChild(_ report: VerifyReport) -> [(path: String, count: Int)] {
        report.countsByChild.sorted { FirebaseKey.compare($0.key.last ?? "", $1.key.last ?? "") < 0 }
            .map { (FirebasePath.string(of: $0.key), $0.value) }
    }

    /// The JSON contract: `equal`, `accepted` (equal, or different only in rejected values --max-rejects
    /// accepts), `differences` (values whole, as JSON), `summary`.
    static func json(_ report: VerifyReport, isAccepted: Bool) -> String {
        let differences = DifferenceViews.json(report.differences)
        let summary = JSONWriter.object([
            ("nodes_compared", String(report.nodesCompared)),
            ("differences", String(report.differenceCount)),
            (
                "by_kind",
                JSONWriter.object(TreeDifference.Kind.allCases.map { ($0.rawValue, String(report.counts[$0] ?? 0)) })
            ),
            ("by_node", JSONWriter.object(countsByChild(report).map { ($0.path, String($0.count)) })),
            (
                "other_nodes",
                JSONWriter.object([
                    ("nodes", String(report.otherChildren.children)),
                    ("differences", String(report.otherChildren.differences)),
                ])
            ),
            ("listed", String(report.differences.count)),
            ("source_bytes", String(report.sourceBytes)),
            ("seconds", JSONWriter.seconds(report.seconds)),
            ("sorted_because", report.sortedBecause.map(JSONWriter.string) ?? "null"),
        ])
        return JSONWriter.object([
            ("equal", report.isEqual ? "true" : "false"), ("accepted", isAccepted ? "true" : "false"),
            ("differences", JSONWriter.array(differences)),
            ("summary", summary),
        ])
    }
}
