import Foundation
import PostgresTestSupport
import Testing

@testable import Admin

@Suite("Help")
struct HelpTests {
    /// Every command and subcommand, as the words that name it (`["chat", "send"]`).
    static let commandPaths: [String] = CommandGroup.all.flatMap(\.commands).flatMap { command in
        [command._commandName] + command.configuration.subcommands.map { "\(command._commandName) \($0._commandName)" }
    }

    @Test(arguments: commandPaths)
    func everyCommandHasHelpWithAnExample(command: String) throws {
        let text = try Help.helpText(for: command.split(separator: " ").map(String.init))
        #expect(text.contains("OVERVIEW:"))
        #expect(text.contains("Examples:"))
        #expect(text.contains("USAGE: admin \(command)"))
    }

    @Test func overviewListsEveryCommand() {
        for command in CommandGroup.all.flatMap(\.commands) {
            #expect(Help.overview.contains("  \(command._commandName) "))
        }
    }

    @Test func unknownCommandsAreUsageErrors() {
        let error = #expect(throws: ConsoleError.self) { try Help.helpText(for: ["nope"]) }
        #expect(error?.status == .usage)
    }
}

/// The texts that describe the code (exit codes, environment, settings, command lists, option defaults) against
/// the code, so that they cannot drift from it again.
@Suite("Help and manual against the code")
struct DocumentationDriftTests {
    /// Every file under Sources/, with its text.
    static func sources() throws -> [(path: String, text: String)] {
        let root = Repository.url("Sources").path
        let files = FileManager.default.enumerator(atPath: root)?.compactMap { $0 as? String } ?? []
        return try files.filter { $0.hasSuffix(".swift") }.map {
            ($0, try String(contentsOfFile: root + "/" + $0, encoding: .utf8))
        }
    }

    @Test func everyVariableTheSourcesReadIsInTheManual() throws {
        let pattern = try Regex(#"environment\["([A-Z_][A-Z0-9_]*)"\]"#)
        var read: Set<String> = []
        for (_, text) in try Self.sources() {
            for match in text.matches(of: pattern) {
                if let name = match.output[1].substring { read.insert(String(name)) }
            }
        }
        #expect(read.count >= 8, "\(read)")
        // The shell's own, which every program reads.
        for name in read.subtracting(["PATH", "HOME", "USER"]) {
            #expect(ManualPage.environment.contains(name), "\(name) is read but not in the manual's ENVIRONMENT")
        }
    }

    @Test func exitStatusThreeNamesEveryCommandThatExitsWithIt() throws {
        let line = try #require(
            ExitStatus.documentation.split(separator: "\n").first {
                $0.trimmingCharacters(in: .whitespaces).hasPrefix("3 ")
            })
        for (path, text) in try Self.sources() where path.hasPrefix("Admin/Commands/") && !path.hasSuffix("Watch.swift")
        {
            guard text.contains("(.violationsFound") else { continue }
            // AuthVerify.swift is `auth verify`.
            let name = String(path.dropFirst("Admin/Commands/".count).dropLast(".swift".count))
            let command = name.reduce(into: "") { words, character in
                if character.isUppercase, !words.isEmpty { words += " " }
                words += character.lowercased()
            }
            #expect(line.contains(command), "\(path) exits 3, but the exit codes say: \(line)")
        }
        // The README's table says the same, code by code.
        let readme = try String(contentsOf: Repository.url("README.md"), encoding: .utf8)
        for status in [ExitStatus.success, .commandFailed, .cannotConnect, .violationsFound, .usage] {
            #expect(readme.contains("| \(status.rawValue) |"), "\(status)")
        }
        #expect(readme.contains("(`check`)") && readme.contains("(`verify`)"))
    }

    @Test func backslashHelpListsEverySetting() {
        for setting in SettingsCommand.Setting.allCases {
            #expect(MetaCommand.help.contains(setting.rawValue), "\\? omits \(setting.rawValue)")
        }
    }

    @Test func theReadmeListsEveryCommand() throws {
        let readme = try String(contentsOf: Repository.url("README.md"), encoding: .utf8)
        let list = try #require(readme.range(of: "Commands: ").map { readme[$0.upperBound...].prefix(800) })
        for command in CommandGroup.all.flatMap(\.commands) {
            #expect(
                list.contains("`\(command._commandName)"), "the README's command list omits \(command._commandName)")
        }
    }

    @Test(arguments: HelpTests.commandPaths)
    func optionHelpSaysItsDefaultOnceAndLeavesTheFormatsToTheParser(command: String) throws {
        let text = try Help.helpText(for: command.split(separator: " ").map(String.init))
        // An option's help wraps over lines: joined, it reads as one.
        let options = text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
            .joined(separator: " ").components(separatedBy: " --")
        for option in options {
            #expect(option.ranges(of: "(default:").count <= 1, "\(command): \(option)")
            // The parser lists an enum's values itself: a list by hand was how "table or json" drifted.
            if option.hasPrefix("format <format>"), let values = option.range(of: "(values:") {
                #expect(!option[..<values.lowerBound].contains("table"), "\(command): \(option)")
                for format in OutputFormat.allCases {
                    #expect(option[values.lowerBound...].contains(format.rawValue), "\(command): \(option)")
                }
            }
        }
    }
}
