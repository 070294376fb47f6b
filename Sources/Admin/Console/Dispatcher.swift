import ArgumentParser

/// Parses one command's arguments with the shared parser and runs it.
enum Dispatcher {
    /// Runs `arguments` (a command and its options) against `session`; throws `ConsoleError`.
    static func run(_ arguments: [String], in session: Session) throws(ConsoleError) {
        guard let name = arguments.first else { return }
        guard knownNames.contains(name) else {
            throw ConsoleError(.usage, "unknown command \"\(name)\" (type help for the list)")
        }
        let command: any ConsoleCommand
        do {
            let parsed = try ConsoleCommands.parseAsRoot(arguments)
            guard let console = parsed as? any ConsoleCommand else {
                // --help and -h parse as the parser's own help command.
                session.output.write(try Help.helpText(for: [name]))
                return
            }
            command = console
        } catch let error as ConsoleError {
            throw error
        } catch {
            throw ConsoleError(.usage, ConsoleCommands.fullMessage(for: error))
        }
        do {
            try command.run(in: session)
        } catch {
            throw ConsoleError.from(error)
        }
    }

    /// Every command name and alias.
    static let knownNames: Set<String> = Set(CommandGroup.all.flatMap(\.commands).flatMap { command in
        [command._commandName] + command.configuration.aliases
    })
}
