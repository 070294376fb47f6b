import Storage

/// Prints what a `--follow` receives as it commits, until Ctrl-C: a log line each in the table formats, one JSON
/// object per line (NDJSON) in `json`, rows under one header in `csv`. Each change is flushed at once, so a pipe
/// or another program sees it without delay.
struct FollowView<Change> {
    var columns: [String]
    var row: (Change) -> [Cell]
    var logLine: (Change) -> String
    var format: OutputFormat

    /// Prints the watch's changes until Ctrl-C, then stops it; `what` names the followed thing for the operator.
    func run(_ watch: Watch<Change>, following what: String, in session: Session) throws {
        if format == .csv {
            session.output.line(TableRenderer.csvLine(columns))
            session.output.flush()
        }
        session.inform("Following \(what); Ctrl-C to stop.")
        while !Interrupt.isPending {
            do {
                for change in try watch.next(waitingAtMost: 0.25) {
                    session.output.line(text(change))
                }
            } catch  where Interrupt.isPending {
                // Ctrl-C's cancel request met the read of a change: the follow ends all the same.
                break
            }
            session.output.flush()
        }
        // Ctrl-C is how a follow ends, not a failure.
        Interrupt.consume()
        try watch.stop()
    }

    private func text(_ change: Change) -> String {
        switch format {
        case .json: TableRenderer.jsonObject(columns: columns, row: row(change))
        case .csv: TableRenderer.csvLine(row(change).map(\.display))
        case .table, .expanded: TerminalText.escaped(logLine(change))
        }
    }
}
