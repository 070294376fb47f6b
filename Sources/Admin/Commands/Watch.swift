import ArgumentParser
import Foundation

/// `watch [SECONDS] COMMAND...`, like psql's `\watch`.
struct WatchCommand: ConsoleCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "Run a command again every few seconds until Ctrl-C.",
        discussion: """
            Each run is headed by the command and the time. A failing command ends the watch, except check \
            finding violations, which is what one watches for.

            Examples:
              watch 5 check --only like_count
              watch status
            """)

    @Argument(
        parsing: .captureForPassthrough,
        help: ArgumentHelp(
            "Seconds between runs (default 2), then the command.",
            valueName: "seconds command"))
    var words: [String] = []

    /// The first word when it is a number (a command's name never is): the seconds between runs.
    private var givenInterval: Double? { words.first.flatMap { Double($0) } }
    private var interval: Double { givenInterval ?? 2 }
    private var command: [String] { givenInterval != nil ? Array(words.dropFirst()) : words }

    /// A day: a longer interval is surely a typo (milliseconds for seconds).
    static let longestInterval = 86_400.0

    func validate() throws {
        if let givenInterval, !(givenInterval > 0 && givenInterval <= Self.longestInterval) {
            throw ValidationError(
                "SECONDS must be more than 0 and at most \(Int(Self.longestInterval)) (a day), not \(words[0])")
        }
        guard let name = command.first else { throw ValidationError("missing COMMAND (watch [SECONDS] COMMAND)") }
        guard name != "watch" else { throw ValidationError("watch cannot watch itself") }
    }

    func run(in session: Session) throws {
        while true {
            session.output.line(
                "Every \(JSONWriter.number(interval)) s: \(command.joined(separator: " "))    "
                    + (DomainViews.time(seconds: Date().timeIntervalSince1970) ?? ""))
            do {
                try Dispatcher.run(command, in: session)
            } catch  where error.status == .violationsFound {
                // What the watch is for: keep going.
            } catch {
                if Interrupt.isPending { break }
                throw error
            }
            session.output.line()
            session.output.flush()
            let deadline = Date().addingTimeInterval(interval)
            while !Interrupt.isPending && Date() < deadline { usleep(50_000) }
            if Interrupt.isPending { break }
        }
        // Ctrl-C is how a watch ends, not a failure.
        Interrupt.consume()
    }
}
