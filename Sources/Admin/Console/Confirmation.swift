import ArgumentParser
import Foundation

/// `--yes`, taken by every command that changes or deletes data in bulk. On a terminal such a command first asks;
/// scripts (`-c`, `-f`, piped input) and cron, which have no one to ask, run it as written.
struct Confirmation: ParsableArguments {
    @Flag(name: [.customShort("y"), .long], help: "Do not ask for confirmation on a terminal.")
    var yes = false

    /// Whether to go on: true with --yes or when nobody can be asked, else the operator's answer to `question`.
    func confirm(_ question: String, in session: Session) -> Bool {
        guard !yes, session.asksForConfirmation else { return true }
        session.diagnostics.write("\(question) [y/N] ")
        session.diagnostics.flush()
        let answer = Self.readAnswer()?.trimmingCharacters(in: .whitespaces).lowercased()
        if answer == nil { session.diagnostics.line() }  // Ctrl-C or end of input left the cursor on the question
        guard answer == "y" || answer == "yes" else {
            session.diagnostics.line("Nothing changed.")
            session.diagnostics.flush()
            return false
        }
        return true
    }

    /// A line from the terminal; nil at its end or when Ctrl-C answers the question (as "no").
    private static func readAnswer() -> String? {
        switch InputLine.read() {
        case .line(let bytes): String(decoding: bytes, as: UTF8.self)
        case .end(let bytes): bytes.isEmpty ? nil : String(decoding: bytes, as: UTF8.self)
        case .interrupted, .tooLong: nil
        }
    }
}
