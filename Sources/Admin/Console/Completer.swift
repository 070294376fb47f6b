import ArgumentParser
import Foundation
import Storage

/// What Tab completes in the interactive console: command and subcommand names, each command's options and
/// their fixed values (from the parser's own description, `CommandSpec`), check names for `--only`/`--skip`,
/// uids from the store where a command expects one (at most `uidLimit`, and only once connected: Tab never
/// starts a server), Firebase paths for `get`, the write verbs and `--path` (the children of the node typed so
/// far, a node with children ending in `/`), backslash commands, and file names for `import`, `export`, `sync`,
/// `verify`, `\i`, `\o` (a directory ending in `/`, as a shell completes it).
struct Completer {
    let session: Session
    var uidLimit = 100

    /// Commands whose first N positional arguments are uids.
    static let uidArguments: [String: Int] = [
        "user show": 1, "user rename": 1, "posts": 1, "timeline": 1, "follow": 2, "unfollow": 2, "like": 1,
        "unlike": 1, "chats": 1, "chat open": 2, "post create": 1, "post delete": 1,
    ]
    /// Commands whose first argument is a Firebase path.
    static let pathArguments: Set<String> = ["get", "set", "update", "push", "remove"]
    /// Options whose value is a uid.
    static let uidOptions: Set<String> = ["--from", "--to", "--user", "--after"]
    /// Options whose values are names of checks, given as a comma-separated list.
    static let checkOptions: Set<String> = ["--only", "--skip"]
    /// Backslash commands, for Tab at the start of a line.
    static let metaCommands = ["\\?", "\\q", "\\x", "\\timing", "\\set", "\\pset", "\\i", "\\o", "\\c"]

    /// The candidates for `word`, given the words before it on the line.
    func complete(wordsBefore: String, word: String) -> Completion {
        if wordsBefore.trimmingCharacters(in: .whitespaces) == "\\" {
            // readline breaks words at a backslash: `\tim` completes the word `tim` after it.
            return .words(Self.metaCommands.map { String($0.dropFirst()) })
        }
        if wordsBefore.trimmingCharacters(in: .whitespaces).hasPrefix("\\") {
            // Backslash commands are read before the tokenizer, which would take the backslash for an escape.
            let name = wordsBefore.split(separator: " ").first.map(String.init) ?? ""
            return ["\\i", "\\o", "\\include", "\\out"].contains(name) ? .files : .words([])
        }
        let words = (try? Tokenizer.split(wordsBefore)) ?? wordsBefore.split(separator: " ").map(String.init)
        guard let name = words.first else {
            return .words(word.hasPrefix("\\") ? Self.metaCommands : Self.commandNames)
        }
        if name == "help" { return .words(Self.commandNames) }
        guard var spec = CommandSpec.root.subcommand(named: name) else { return .words([]) }
        var path = [name]
        for word in words.dropFirst() {
            guard let sub = spec.subcommand(named: word) else { break }
            spec = sub
            path.append(word)
        }
        let previous = words.count > path.count ? words.last : nil
        if let previous, let values = spec.optionValues[previous] { return .words(values) }
        if let previous, Self.uidOptions.contains(previous) { return .words(uids(startingWith: word)) }
        if let previous, Self.checkOptions.contains(previous) {
            // A comma-separated list: complete its last name, keeping the ones before.
            let done = word.split(separator: ",", omittingEmptySubsequences: false).dropLast().joined(separator: ",")
            return .prefixes(IntegrityCheck.allCases.map { (done.isEmpty ? "" : done + ",") + $0.rawValue })
        }
        let positionals = Self.positionals(in: Array(words.dropFirst(path.count)), of: spec)
        if previous == "--path" || (Self.pathArguments.contains(name) && positionals == 0 && !word.hasPrefix("-")) {
            return .prefixes(paths(startingWith: word))
        }
        if word.hasPrefix("-") { return .words(spec.longOptionNames) }
        if !spec.subcommands.isEmpty && words.count == path.count {
            return .words(spec.subcommands.map { $0.names[0] })
        }
        if ["import", "export", "sync", "verify"].contains(name) { return .files }
        let key = path.joined(separator: " ")
        if let count = Self.uidArguments[key], positionals < count { return .words(uids(startingWith: word)) }
        return .words([])
    }

    /// The files and directories whose paths start with `word` (relative to the working directory, or from `~/`),
    /// a directory with a `/` after it; names starting with `.` only where `word`'s last part does. At most
    /// `limit`, in order.
    static func fileNames(matching word: String, limit: Int = 1_000) -> [String] {
        let slash = word.lastIndex(of: "/")
        let typedDirectory = slash.map { String(word[...$0]) } ?? ""
        let partial = slash.map { String(word[word.index(after: $0)...]) } ?? word
        var directory = typedDirectory.isEmpty ? "." : typedDirectory
        if directory == "~/" || directory.hasPrefix("~/") {
            directory = NSHomeDirectory() + directory.dropFirst()
        }
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return [] }
        return names.filter { $0.hasPrefix(partial) && (partial.hasPrefix(".") || !$0.hasPrefix(".")) }.sorted()
            .prefix(limit).map { name in
                var isDirectory: ObjCBool = false
                let exists = FileManager.default.fileExists(atPath: directory + "/" + name, isDirectory: &isDirectory)
                return typedDirectory + name + (exists && isDirectory.boolValue ? "/" : "")
            }
    }

    /// Firebase paths: the children of the node before the last `/` whose keys start with what follows it, each
    /// with a `/` after it when it has children of its own (as a shell completes directories).
    private func paths(startingWith word: String) -> [String] {
        let text = word.hasPrefix("/") ? word : "/" + word
        guard let slash = text.lastIndex(of: "/") else { return [] }
        let parent = String(text[..<slash])
        let partial = String(text[text.index(after: slash)...])
        guard let keys = try? FirebasePath.keys(of: parent), let store = session.connectedStore,
            let children = try? store.childKeys(of: keys, startingWith: partial, limit: uidLimit)
        else { return [] }
        // Offered as typed, with or without the leading slash, so that they extend the word.
        let written = word.hasPrefix("/") ? parent : String(parent.dropFirst())
        return children.map { child in
            let path = written.isEmpty && !word.hasPrefix("/") ? child : written + "/" + child
            // One child: say whether it goes on, so that Tab again lists its children.
            guard children.count == 1,
                (try? store.childKeys(of: keys + [child], startingWith: "", limit: 1))?.isEmpty == false
            else { return path }
            return path + "/"
        }
    }

    private func uids(startingWith prefix: String) -> [String] {
        (try? session.connectedStore?.uids(startingWith: prefix, limit: uidLimit)) ?? []
    }

    static let commandNames = CommandGroup.all.flatMap(\.commands).map { $0._commandName }

    /// How many of `words` (after the command's name) are positional arguments: not options, nor the values of
    /// options that take one.
    static func positionals(in words: [String], of spec: CommandSpec) -> Int {
        var count = 0
        var skipsNext = false
        for word in words {
            if skipsNext {
                skipsNext = false
                continue
            }
            if spec.recognizes(word) {
                skipsNext = spec.takesValue(word)
                continue
            }
            count += 1
        }
        return count
    }
}
