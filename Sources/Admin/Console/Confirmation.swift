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
        let answer = readLine(strippingNewline: true)?.trimmingCharacters(in: .whitespaces).lowercased()
        guard answer == "y" || answer == "yes" else {
            session.diagnostics.line("Nothing changed.")
            session.diagnostics.flush()
            return false
        }
        return true
    }
}
