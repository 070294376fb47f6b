import ArgumentParser

/// `help [COMMAND]`: the command list by group, or one command's full help.
struct Help: ConsoleCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the commands, or show one command's help.",
        discussion: """
            `help COMMAND`, `COMMAND --help` and `COMMAND -h` print the same text.

            Examples:
              help
              help status
            """)

    @Argument(help: "The command to explain.")
    var command: [String] = []

    func run(in session: Session) throws {
        guard command.isEmpty else {
            session.output.write(try Self.helpText(for: command))
            return
        }
        session.output.write(Self.overview)
    }

    /// The same text `COMMAND --help` prints.
    static func helpText(for command: [String]) throws -> String {
        guard let name = command.first, Dispatcher.knownNames.contains(name) else {
            throw ConsoleError(.usage, "no such command: \(command.joined(separator: " ")) (try: help)")
        }
        do {
            // The parser answers --help with its own help command, whose run throws the text.
            var parsed = try ConsoleCommands.parseAsRoot(command + ["--help"])
            try parsed.run()
        } catch  where ConsoleCommands.exitCode(for: error) == .success {
            return ConsoleCommands.fullMessage(for: error) + "\n"
        }
        throw ConsoleError(.usage, "no such command: \(command.joined(separator: " ")) (try: help)")
    }

    /// Every command with its one-line summary, by group.
    static var overview: String {
        let width = CommandGroup.all.flatMap(\.commands).map { $0._commandName.count }.max() ?? 0
        var text = ""
        for group in CommandGroup.all {
            text += "\(group.title):\n"
            for command in group.commands {
                text += "  " + command._commandName.padding(toLength: width + 2) + command.configuration.abstract + "\n"
            }
            text += "\n"
        }
        text += "Type `help COMMAND` or `COMMAND --help` for details and examples.\n"
        return text
    }
}
