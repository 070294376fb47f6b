import ArgumentParser

/// Parses one command's arguments with the shared parser and runs it.
enum Dispatcher {
    /// Runs `arguments` (a command and its options) against `session`; throws `ConsoleError`.
    static func run(_ arguments: [String], in session: Session) throws(ConsoleError) {
        guard let name = arguments.first else { return }
        guard knownNames.contains(name) else {
            throw ConsoleError(
                .usage,
                "unknown command \"\(name)\"" + suggestion(for: name, among: Array(knownNames))
                    + " (type help for the list)")
        }
        let command: any ConsoleCommand
        do {
            let parsed = try ConsoleCommands.parseAsRoot(try arrange(arguments))
            guard let console = parsed as? any ConsoleCommand else {
                // --help and -h parse as the parser's own help command: the help of the (sub)command named.
                session.output.write(try Help.helpText(for: commandPath(of: arguments)))
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
    static let knownNames: Set<String> = Set(
        CommandGroup.all.flatMap(\.commands).flatMap { command in
            [command._commandName] + command.configuration.aliases
        })

    /// The command and subcommand names at the start of `words`.
    static func commandPath(of words: [String]) -> [String] {
        var spec = CommandSpec.root
        var path: [String] = []
        for word in words {
            guard let next = spec.subcommand(named: word) else { break }
            spec = next
            path.append(word)
        }
        return path
    }

    /// Puts a command line in the form the parser reads without guessing: the command's names, then its options
    /// (an option's value joined to it as `--name=value`, so that the value may start with `-`), then `--` and
    /// every other word. Push IDs (`-NxQ3bH0Jb2Sc5HWq5nQ`), negative numbers and anything else that starts with a
    /// single `-` but is none of the command's options are arguments, never options; `--` ends the options, as in
    /// any Unix tool. A word that starts with `--` and is no option of the command is an error, with a
    /// suggestion. A command whose last argument takes the rest of the line (`watch`) gets it as written.
    static func arrange(_ words: [String]) throws(ConsoleError) -> [String] {
        // The command itself is described alone: `CommandSpec.root` describes every command.
        var spec: CommandSpec
        var path: [String] = []
        var index = 0
        if let name = words.first, let command = CommandSpec.command(named: name) {
            spec = command
            path.append(name)
            index = 1
        } else {
            spec = CommandSpec.root
        }
        while index < words.count, let next = spec.subcommand(named: words[index]) {
            spec = next
            path.append(words[index])
            index += 1
        }
        var options: [String] = []
        var arguments: [String] = []
        while index < words.count {
            let word = words[index]
            index += 1
            if spec.passesRemainder && !arguments.isEmpty {
                return path + options + arguments + words[(index - 1)...]
            }
            if word == "--" {
                arguments += words[index...]
                break
            }
            if spec.recognizes(word) {
                guard spec.takesValue(word) else {
                    options.append(word)
                    continue
                }
                guard index < words.count else {
                    throw ConsoleError(.usage, "\(word) needs a value (see help \(path.joined(separator: " ")))")
                }
                let value = words[index]
                index += 1
                if let long = word.hasPrefix("--")
                    ? word : word.last.flatMap({ spec.longNameOfShort[$0] }).map({ "--" + $0 })
                {
                    options.append(long + "=" + value)
                } else {
                    options += [word, value]
                }
            } else if word.hasPrefix("--"), word.count > 2 {
                let name = String(word.prefix { $0 != "=" })
                throw ConsoleError(
                    .usage,
                    "unknown option \(name)" + suggestion(for: name, among: spec.longOptionNames)
                        + " (-- ends the options, if \(word) is an argument)")
            } else {
                arguments.append(word)
            }
        }
        if spec.passesRemainder { return path + options + arguments }
        return path + options + (arguments.isEmpty ? [] : ["--"] + arguments)
    }

    /// `; did you mean "x"?` for the nearest of `candidates` within two edits, else for the one candidate that
    /// `word` abbreviates (`chat_dups` for `chat_duplicates`), else nothing.
    static func suggestion(for word: String, among candidates: [String]) -> String {
        let scored = candidates.map { ($0, editDistance(word, $0)) }.filter { $0.1 <= 2 && $0.1 < word.count }
        if let best = scored.min(by: { $0.1 < $1.1 || ($0.1 == $1.1 && $0.0 < $1.0) }) {
            return "; did you mean \"\(best.0)\"?"
        }
        let abbreviated = candidates.filter { isAbbreviation(word, of: $0) }
        guard abbreviated.count == 1 else { return "" }
        return "; did you mean \"\(abbreviated[0])\"?"
    }

    /// Whether `word` (four characters or more) keeps `candidate`'s first character and the rest of its
    /// characters in order: a shortened name.
    private static func isAbbreviation(_ word: String, of candidate: String) -> Bool {
        guard word.count >= 4, word.first == candidate.first else { return false }
        var remaining = candidate[...]
        for character in word {
            guard let found = remaining.firstIndex(of: character) else { return false }
            remaining = remaining[remaining.index(after: found)...]
        }
        return true
    }

    /// Levenshtein distance, for suggestions.
    static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        guard !a.isEmpty else { return b.count }
        var previous = Array(0...b.count)
        for (i, x) in a.enumerated() {
            var current = [i + 1] + Array(repeating: 0, count: b.count)
            for (j, y) in b.enumerated() {
                current[j + 1] = min(previous[j + 1] + 1, current[j] + 1, previous[j] + (x == y ? 0 : 1))
            }
            previous = current
        }
        return previous[b.count]
    }
}
