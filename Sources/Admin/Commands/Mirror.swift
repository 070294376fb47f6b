import ArgumentParser
import Foundation
import Storage

/// `mirror SOURCE`: applies a Realtime Database's live change feed to the store until the stream ends.
struct MirrorCommand: ConsoleCommand {
    static let configuration = CommandConfiguration(
        commandName: "mirror",
        abstract: "Apply a Realtime Database's live change feed (REST streaming) to the store until it ends.",
        discussion: """
            SOURCE is the server-sent event stream Firebase's REST API sends for a GET with Accept: \
            text/event-stream, or - for stdin: what curl prints. The recipe, with the credential read from a \
            file and never on a command line:

              curl -sN -L -H 'Accept: text/event-stream' -K - <<<"url = \\"https://DB.firebaseio.com/.json?auth=$(cat token)\\"" | admin mirror -

            The stream's first put holds the whole location: it is applied as sync applies a file, writing only \
            what differs, in one transaction that readers never wait for, so a restart or a reconnect loses \
            nothing and rewrites nothing that did not change. Each later put is Firebase's set at its path and \
            each patch its multi-path update, with every kept copy right; they are grouped into transactions of \
            at most --batch events, committed at the latest 100 ms after their first event and at once when the \
            input has nothing more ready, never half an event. A transaction's events are written together, \
            as the nodes they leave changed (a thousand patches of one leaf cost about one write); an event the \
            store refuses is then found by writing them one by one. --at PATH says where the streamed location is in \
            the store (a stream of /posts.json is --at /posts).

            keep-alive events are heard and skipped, as are events of other names. The mirror holds the \
            maintenance lock while it runs: import, sync, repairs and another mirror of the store are refused \
            (or wait with their --wait), naming it; the app's writes and every reader go on. Progress goes to \
            stderr every 10 s on a terminal; --metrics-file writes Prometheus text (events applied, the last \
            event's time, seconds behind, whether connected) after each transaction, at most once a second, and \
            once at the end.

            Exit status: 0 when the stream ends (the connection closed: reconnect); 5 on a cancel event (the \
            rules no longer allow this read: someone must look); 6 on auth_revoked (the credential expired: \
            reconnect with a new one); 65 for a malformed stream or an event the store refuses, the store as of \
            the last whole event before it; 2 when the database is lost.

            Examples:
              mirror events.txt
              mirror - --at /posts --metrics-file /var/lib/node_exporter/admin-mirror.prom
            """)

    @Argument(help: "The event stream to read, or - for stdin.", completion: .file())
    var source: String

    @Option(help: ArgumentHelp("The streamed location's place in the store.", valueName: "path"))
    var at = "/"

    @Option(help: "At most this many events per transaction.")
    var batch = 1000

    @Option(help: "Write Prometheus metrics to this file after each transaction (at most once a second).")
    var metricsFile: String?

    @Flag(
        help: """
            Let a put leave the store (or the node at --at) empty (a put of null at the streamed location is \
            judged by itself, other removals by what their transaction leaves).
            """)
    var allowEmpty = false

    @Option(help: "Where a large first put is sorted, when its keys are out of order (default: $TMPDIR or /tmp).")
    var tempDir: String?

    @OptionGroup var wait: MaintenanceWaitOption

    func validate() throws {
        _ = try FirebasePath.keys(of: at)
        guard batch >= 1 else { throw ValidationError("--batch must be 1 or more") }
    }

    func run(in session: Session) throws {
        let input = try InputFile(path: source)
        defer { input.close() }
        let store = try session.store()
        let temporaryDirectory = tempDir ?? TreeSorter.defaultTemporaryDirectory
        var reader = EventStreamReader(source: try input.source(), temporaryDirectory: temporaryDirectory)
        let options = MirrorOptions(
            at: try FirebasePath.keys(of: at), batchEvents: batch, allowsEmptying: allowEmpty,
            temporaryDirectory: temporaryDirectory,
            wait: wait.maintenanceWait(in: session))
        var lastMetrics = Date.distantPast
        var lastShown = Date()
        let started = Date()
        let writeMetrics = { (progress: MirrorProgress, connected: Bool) in
            guard let metricsFile else { return }
            try MirrorMetrics(progress: progress, connected: connected).write(to: metricsFile)
        }
        let report: MirrorReport
        do {
            report = try store.mirror(
                &reader, options: options, isInputReady: { input.hasInputReady },
                onCommit: { progress in
                    if Date().timeIntervalSince(lastMetrics) >= 1 {
                        lastMetrics = Date()
                        try writeMetrics(progress, true)
                    }
                    if session.diagnostics.isTerminal, Date().timeIntervalSince(lastShown) >= 10 {
                        lastShown = Date()
                        session.inform(Self.describe(progress, since: started))
                    }
                })
        } catch let error as StorageError where error.kind == .malformedInput || error.kind == .invalidValue {
            throw ConsoleError(.malformedStream, error.description)
        }
        try writeMetrics(report.progress, false)
        let summary = Self.describe(report.progress, since: started)
        switch report.end {
        case .endOfStream:
            session.inform("The stream ended: " + summary)
        case .cancelled(let reason):
            throw ConsoleError(
                .streamCancelled,
                "the database cancelled the stream (its rules no longer allow this read"
                    + (reason.isEmpty ? "" : ": \(reason)") + "): " + summary)
        case .authRevoked:
            throw ConsoleError(
                .credentialRevoked,
                "the stream's credential was revoked (it expired): reconnect with a new one; " + summary)
        }
    }

    /// Events, transactions and lag, in a line.
    static func describe(_ progress: MirrorProgress, since started: Date) -> String {
        "\(DomainViews.count(progress.eventsApplied, "event")) applied in "
            + "\(DomainViews.count(progress.transactions, "transaction")) over "
            + DomainViews.duration(Date().timeIntervalSince(started))
            + (progress.firstPut.map {
                " (the first put: \(DomainViews.count($0.counts.values.reduce(0, +), "difference")))"
            } ?? "")
            + (progress.keepAlives > 0 ? ", \(DomainViews.count(progress.keepAlives, "keep-alive"))" : "")
            + (progress.unknownEvents > 0 ? ", \(progress.unknownEvents) events of unknown names skipped" : "")
            + "; \(String(format: "%.3f", progress.secondsBehind)) s behind at the last commit."
    }
}
