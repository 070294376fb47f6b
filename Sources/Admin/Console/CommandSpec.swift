import ArgumentParser
import Foundation
import Synchronization

/// What a command accepts, read from the argument parser's own description of it (`_dumpHelp()`), so that the
/// console reads its lines with the same definitions the parser has: names, which options take a value,
/// subcommands.
struct CommandSpec: Equatable {
    /// The command's name and aliases.
    var names: [String]
    /// Long option and flag names without dashes, and whether each takes a value.
    var longOptions: [String: Bool] = [:]
    /// Short names (one character) and whether each takes a value.
    var shortOptions: [Character: Bool] = [:]
    /// Each short name's long form, where it has one.
    var longNameOfShort: [Character: String] = [:]
    /// The values an option accepts, where they are a fixed list (`--format`).
    var optionValues: [String: [String]] = [:]
    var subcommands: [CommandSpec] = []
    /// Whether the command's last argument takes the rest of the line as it is (`watch`).
    var passesRemainder = false

    /// Every console command, from the parser's description of the root.
    static let root = describing(ConsoleCommands.self)

    /// The options `admin` itself takes before a command (`--db`, `-q`, …).
    static let global = describing(AdminMain.self)

    /// The top-level command named `name` (or one of its aliases), from the parser's description of that command
    /// alone, as `root` has it: a process that runs one command does not describe every other (for a point read,
    /// describing them all cost about as much as the rest of the process).
    static func command(named name: String) -> CommandSpec? {
        if let known = described.withLock({ $0[name] }) { return known }
        let type = CommandGroup.all.lazy.flatMap(\.commands).first {
            $0._commandName == name || $0.configuration.aliases.contains(name)
        }
        guard let type else { return nil }
        var spec = describing(type)
        // Described as a root, a command gains the parser's own `help` subcommand, which it has not in the console.
        spec.subcommands.removeAll { $0.names == ["help"] }
        described.withLock { $0[name] = spec }
        return spec
    }

    private static let described = Mutex<[String: CommandSpec]>([:])

    /// A command as the parser describes it (`_dumpHelp()`, the JSON of `--experimental-dump-help`).
    private static func describing(_ command: any ParsableCommand.Type) -> CommandSpec {
        let json = Data(command._dumpHelp().utf8)
        let info = (try? JSONDecoder().decode(ToolInfo.self, from: json))?.command
        return info.map(CommandSpec.init) ?? CommandSpec(names: [command._commandName])
    }

    private init(names: [String]) {
        self.names = names
    }

    private init(_ info: ToolInfo.Command) {
        names = [info.commandName] + (info.aliases ?? [])
        subcommands = (info.subcommands ?? []).map(CommandSpec.init)
        passesRemainder = (info.arguments ?? []).contains {
            $0.kind == "positional" && $0.parsingStrategy == "allRemainingInput"
        }
        for argument in info.arguments ?? [] where argument.kind != "positional" {
            let takesValue = argument.kind == "option"
            for name in argument.names ?? [] {
                if name.kind == "short", let character = name.name.first {
                    shortOptions[character] = takesValue
                    if let long = argument.names?.first(where: { $0.kind == "long" }) {
                        longNameOfShort[character] = long.name
                    }
                } else {
                    longOptions[name.name] = takesValue
                    if let values = argument.allValues, !values.isEmpty { optionValues["--" + name.name] = values }
                }
            }
        }
        // The parser answers these itself; its description leaves them out.
        longOptions["help", default: false] = false
        shortOptions["h", default: false] = false
    }

    /// The subcommand named `name`, if this command has one.
    func subcommand(named name: String) -> CommandSpec? {
        subcommands.first { $0.names.contains(name) }
    }

    /// Whether `word` is one of this command's options or flags, as written (`--limit`, `--limit=5`, `-y`).
    func recognizes(_ word: String) -> Bool {
        if word.hasPrefix("--") {
            let name = word.dropFirst(2).prefix { $0 != "=" }
            return !name.isEmpty && longOptions[String(name)] != nil
        }
        guard word.count == 2, word.hasPrefix("-"), let letter = word.last else { return false }
        return shortOptions[letter] != nil
    }

    /// Whether the option `word` (as `recognizes` accepts it) takes a value from the next word.
    func takesValue(_ word: String) -> Bool {
        if word.hasPrefix("--") { return !word.contains("=") && longOptions[String(word.dropFirst(2))] == true }
        return word.last.flatMap { shortOptions[$0] } == true
    }

    /// `admin`'s own arguments with its options moved before the command where they were written after it
    /// (`admin check --db X -q`, as psql takes them): an option of `admin` that the command does not have itself
    /// goes first. The command's own options, `--` and all that follows, and the rest of a command that takes
    /// it (`watch`, `psql`) stay as written.
    static func liftingGlobalOptions(_ arguments: [String]) -> [String] {
        // With no option after the first word that is none (a command, or an option's value), nothing can be
        // lifted, and the parser's description, which every process would otherwise read first, is not needed.
        guard let first = arguments.firstIndex(where: { !$0.hasPrefix("-") }),
            arguments[(first + 1)...].contains(where: { $0.hasPrefix("-") })
        else { return arguments }
        var index = 0
        while index < arguments.count, global.recognizes(arguments[index]) {
            index += global.takesValue(arguments[index]) ? 2 : 1
        }
        guard index < arguments.count, var command = Self.command(named: arguments[index]) else { return arguments }
        let before = arguments[..<index]
        var lifted: [String] = []
        var kept = [arguments[index]]
        index += 1
        while index < arguments.count, let sub = command.subcommand(named: arguments[index]) {
            command = sub
            kept.append(arguments[index])
            index += 1
        }
        while index < arguments.count {
            let word = arguments[index]
            if word == "--" || command.passesRemainder {
                kept += arguments[index...]
                break
            }
            let isCommands = command.recognizes(word)
            let takesValue = isCommands ? command.takesValue(word) : global.recognizes(word) && global.takesValue(word)
            let end = min(arguments.count, index + (takesValue ? 2 : 1))
            if !isCommands, global.recognizes(word) {
                lifted += arguments[index..<end]
            } else {
                kept += arguments[index..<end]
            }
            index = end
        }
        return before + lifted + kept
    }

    /// Long options, with their dashes, for completion and suggestions.
    var longOptionNames: [String] { longOptions.keys.sorted().map { "--" + $0 } }
}

/// The part of swift-argument-parser's `ToolInfoV0` (`--experimental-dump-help`) the console reads.
private struct ToolInfo: Decodable {
    struct Command: Decodable {
        var commandName: String
        var aliases: [String]?
        var subcommands: [Command]?
        var arguments: [Argument]?
    }

    struct Argument: Decodable {
        struct Name: Decodable {
            var kind: String
            var name: String
        }

        var kind: String
        var names: [Name]?
        var allValues: [String]?
        var parsingStrategy: String?
    }

    var command: Command
}
