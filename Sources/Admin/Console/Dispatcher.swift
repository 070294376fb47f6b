import ArgumentParser

/// Parses one command's arguments with the shared parser and runs it.
enum Dispatcher {
    /// Runs `arguments` (a command and its options) against `session`; throws `ConsoleError`.
    static func run(_ words: [String], in session: Session) throws(ConsoleError) {
        let (arguments, isQuiet) = liftingQuiet(words)
        guard let name = arguments.first else { return }
        if isQuiet, !session.isQuiet {
            session.isQuiet = true
            defer { session.isQuiet = false }
            return try run(arguments, in: session)
        }
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
                session.page(try Help.helpText(for: commandPath(of: arguments)))
                return
            }
            command = console
        } catch let error as ConsoleError {
            throw error
        } catch {
            // The console names the command before the message ("admin: get: …"): the parser's own "Error: "
            // would be a second prefix.
            let message = ConsoleCommands.fullMessage(for: error)
            throw ConsoleError(.usage, message.hasPrefix("Error: ") ? String(message.dropFirst(7)) : message)
        }
        do {
            try command.run(in: session)
        } catch {
            throw ConsoleError.from(error)
        }
    }

    /// `words` without a `-q` or `--quiet` written after a command that has no such option of its own, and whether
    /// there was one: quiet for that command alone. On admin's command line `admin status -q` is admin's own
    /// option lifted from after the command; a script line or stdin means the same. Words after `--`, and after
    /// a command that takes the rest of the line (`watch`, `psql`), stay as written.
    static func liftingQuiet(_ words: [String]) -> (words: [String], isQuiet: Bool) {
        guard let name = words.first, var spec = CommandSpec.command(named: name),
            words.contains(where: { $0 == "-q" || $0 == "--quiet" })
        else { return (words, false) }
        var index = 1
        while index < words.count, let sub = spec.subcommand(named: words[index]) {
            spec = sub
            index += 1
        }
        var kept = Array(words[..<index])
        var isQuiet = false
        while index < words.count {
            let word = words[index]
            // A command that takes the rest of the line (watch's command, psql's options) has it as written.
            if word == "--" || spec.passesRemainder {
                kept += words[index...]
                break
            }
            if word == "-q" || word == "--quiet", !spec.recognizes(word) {
                isQuiet = true
            } else {
                kept.append(word)
                // An option's value stays with it, whatever it reads.
                if spec.recognizes(word), spec.takesValue(word), index + 1 < words.count {
                    index += 1
                    kept.append(words[index])
                }
            }
            index += 1
        }
        return (kept, isQuiet)
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
