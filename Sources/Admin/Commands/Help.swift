import ArgumentParser

/// `help [COMMAND]`: the command list by group, or one command's full help.
struct Help: ConsoleCommand {
    static let configuration = CommandConfiguration(
        commandName: "help",
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
        // Longer than a screen: paged on a terminal, as a table is.
        session.page(command.isEmpty ? Self.overview : try Self.helpText(for: command))
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

    /// Every command with its one-line summary, by group; a summary longer than the 79 columns `--help`
    /// wraps to goes on under itself, not back at the margin.
    static var overview: String { overview(width: 79) }

    /// `overview` within `width` columns (the manual page's are fewer).
    static func overview(width: Int) -> String {
        let indent = 2 + (CommandGroup.all.flatMap(\.commands).map { $0._commandName.count }.max() ?? 0) + 2
        var text = ""
        for group in CommandGroup.all {
            text += "\(group.title):\n"
            for command in group.commands {
                let lines = wrapped(command.configuration.abstract, width: width - indent)
                text +=
                    "  " + command._commandName.padding(toLength: indent - 2)
                    + lines.joined(
                        separator: "\n" + String(repeating: " ", count: indent)) + "\n"
            }
            text += "\n"
        }
        text += "Type `help COMMAND` or `COMMAND --help` for details and examples.\n"
        return text
    }

    /// `text` in lines of at most `width` characters, broken at spaces (a longer word stands alone).
    static func wrapped(_ text: String, width: Int) -> [String] {
        var lines: [String] = []
        var line = ""
        for word in text.split(separator: " ") {
            if !line.isEmpty, line.count + 1 + word.count > width {
                lines.append(line)
                line = ""
            }
            line += (line.isEmpty ? "" : " ") + word
        }
        return lines + [line]
    }
}
