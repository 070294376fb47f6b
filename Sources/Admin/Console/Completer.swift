import ArgumentParser
import Storage

/// What Tab completes in the interactive console: command and subcommand names, each command's options and
/// their fixed values, uids from the store where a command expects one (at most `uidLimit`, and only once
/// connected: Tab never starts a server), Firebase paths for `get` and `--path` (the children of the node typed
/// so far), and file names for `import` and `export`.
struct Completer {
    let session: Session
    var uidLimit = 100

    /// Commands whose first N positional arguments are uids.
    static let uidArguments: [String: Int] = [
        "user show": 1, "user rename": 1, "posts": 1, "timeline": 1, "follow": 2, "unfollow": 2, "like": 1,
        "unlike": 1, "chats": 1, "chat open": 2, "post create": 1, "post delete": 1,
    ]
    /// Options whose value is a uid.
    static let uidOptions: Set<String> = ["--from", "--to", "--user", "--after"]
    /// Options whose values are a fixed list.
    static let optionValues: [String: [String]] = [
        "--format": OutputFormat.allCases.map(\.rawValue),
        "--prefer": FollowPreference.allCases.map(\.rawValue),
        "--mode": ["replace", "merge"],
        "--on-error": ErrorPolicy.allCases.map(\.rawValue),
    ]

    /// The candidates for `word`, given the words before it on the line.
    func complete(wordsBefore: String, word: String) -> Completion {
        let words = (try? Tokenizer.split(wordsBefore)) ?? wordsBefore.split(separator: " ").map(String.init)
        guard let name = words.first else { return .words(Self.commandNames) }
        if name == "help" { return .words(Self.commandNames) }
        guard var command = Self.command(named: name) else { return .words([]) }
        var path = [name]
        for word in words.dropFirst() {
            guard let sub = command.configuration.subcommands.first(where: { $0._commandName == word }) else { break }
            command = sub
            path.append(word)
        }
        let previous = words.count > path.count ? words.last : nil
        if let previous, let values = Self.optionValues[previous] { return .words(values) }
        if let previous, Self.uidOptions.contains(previous) { return .words(uids(startingWith: word)) }
        let positionals = Self.positionals(in: Array(words.dropFirst(path.count)), of: path)
        if previous == "--path" || (name == "get" && positionals == 0 && !word.hasPrefix("-")) {
            return .prefixes(paths(startingWith: word))
        }
        if word.hasPrefix("-") { return .words(Self.options(of: path)) }
        if !command.configuration.subcommands.isEmpty && words.count == path.count {
            return .words(command.configuration.subcommands.map { $0._commandName })
        }
        if ["import", "export"].contains(name) { return .files }
        let key = path.joined(separator: " ")
        if let count = Self.uidArguments[key], positionals < count { return .words(uids(startingWith: word)) }
        return .words([])
    }

    /// Firebase paths: the children of the node before the last `/` whose keys start with what follows it.
    private func paths(startingWith word: String) -> [String] {
        let text = word.hasPrefix("/") ? word : "/" + word
        let parent = String(text[..<text.lastIndex(of: "/")!])
        let partial = String(text[text.index(after: text.lastIndex(of: "/")!)...])
        guard let keys = try? FirebasePath.keys(of: parent),
              let children = try? session.connectedStore?.childKeys(of: keys, startingWith: partial, limit: uidLimit)
        else { return [] }
        // Offered as typed, with or without the leading slash, so that they extend the word.
        let written = word.hasPrefix("/") ? parent : String(parent.dropFirst())
        return children.map { written.isEmpty && !word.hasPrefix("/") ? $0 : written + "/" + $0 }
    }

    private func uids(startingWith prefix: String) -> [String] {
        (try? session.connectedStore?.uids(startingWith: prefix, limit: uidLimit)) ?? []
    }

    static let commandNames = CommandGroup.all.flatMap(\.commands).map { $0._commandName }

    static func command(named name: String) -> ParsableCommand.Type? {
        CommandGroup.all.flatMap(\.commands).first { $0._commandName == name || $0.configuration.aliases.contains(name) }
    }

    /// How many of `words` (after the command's name) are positional arguments: not options, nor the values of
    /// options that take one.
    static func positionals(in words: [String], of path: [String]) -> Int {
        let takesValue = Set(valueOptions(of: path))
        var count = 0
        var skipsNext = false
        for word in words {
            if skipsNext { skipsNext = false; continue }
            if word.hasPrefix("-") { skipsNext = takesValue.contains(word); continue }
            count += 1
        }
        return count
    }

    /// The long options that take a value (`--limit <limit>` in the help).
    static func valueOptions(of path: [String]) -> [String] {
        guard let help = try? Help.helpText(for: path) else { return [] }
        let tokens = help.split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "," })
        return zip(tokens, tokens.dropFirst()).compactMap { option, value in
            option.hasPrefix("--") && value.hasPrefix("<") ? String(option) : nil
        }
    }

    /// The long options a command's help lists.
    static func options(of path: [String]) -> [String] {
        guard let help = try? Help.helpText(for: path), let start = help.range(of: "OPTIONS:") else { return [] }
        var options: [String] = []
        for token in help[start.upperBound...].split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "," || $0 == "/" })
        where token.hasPrefix("--") && token.count > 2 {
            let option = String(token.prefix { $0 != "=" && $0 != "<" && $0 != ")" && $0 != "." })
            if !options.contains(option) { options.append(option) }
        }
        return options
    }
}
