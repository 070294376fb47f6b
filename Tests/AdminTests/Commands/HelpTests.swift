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
