import Testing
@testable import Admin

@Suite("Help")
struct HelpTests {
    @Test(arguments: CommandGroup.all.flatMap(\.commands).map { $0._commandName })
    func everyCommandHasHelpWithAnExample(command: String) throws {
        let text = try Help.helpText(for: [command])
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
