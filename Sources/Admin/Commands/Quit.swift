import ArgumentParser

/// `quit` (or `exit`, or Ctrl-D): leaves the console.
struct Quit: ConsoleCommand {
    static let configuration = CommandConfiguration(
        commandName: "quit",
        abstract: "Leave the console (also: exit, Ctrl-D).",
        discussion: """
            Examples:
              quit
            """,
        aliases: ["exit"])

    func run(in session: Session) throws {
        session.wantsToQuit = true
    }
}
