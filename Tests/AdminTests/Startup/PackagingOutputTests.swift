import Foundation
import Testing

/// What the Debian package is made from, printed by the binary itself (checked here without Debian's tools;
/// `PackageTests` installs and uses them).
@Suite("The manual page and completions")
struct PackagingOutputTests {
    @Test func theManualPageHasEveryCommandAndTheOperatorsSections() throws {
        let run = try AdminProcess.run(["--generate-manual"])
        #expect(run.status == 0, "\(run.stderr)")
        let version = try AdminProcess.run(["--version"]).stdout.trimmingCharacters(in: .newlines)
        #expect(run.stdout.hasPrefix(".TH ADMIN 1 \"\" \"admin \(version)\""))
        let help = try AdminProcess.run(["help"]).stdout
        // Every command `help` lists has its own subsection, with its full help.
        let commands = help.split(separator: "\n").filter { $0.hasPrefix("  ") && !$0.hasPrefix("   ") }
            .compactMap { $0.split(separator: " ").first.map(String.init) }
        #expect(commands.count > 30)
        for command in commands {
            #expect(run.stdout.contains("\n.SS \(command.replacingOccurrences(of: "-", with: "\\-"))\n"), "\(command)")
        }
        for section in ["OPTIONS", "COMMANDS", "CONNECTING", "THE EMBEDDED CLUSTER", "EXIT STATUS", "ENVIRONMENT"] {
            #expect(run.stdout.contains("\n.SH \(section)"), "\(section)")
        }
        // No line of text that troff would take for a request.
        let requests = Set([
            "TH", "SH", "SS", "PP", "B", "br", "nf", "fi",
        ])
        for line in run.stdout.split(separator: "\n") where line.hasPrefix(".") || line.hasPrefix("'") {
            let name = line.dropFirst().split(separator: " ").first.map(String.init) ?? ""
            #expect(requests.contains(name), "a text line troff would read as a request: \(line)")
        }
    }

    @Test(arguments: ["bash", "zsh", "fish"])
    func completionKnowsTheCommandsAndTheirOptions(shell: String) throws {
        let run = try AdminProcess.run(["--generate-completion-script", shell])
        #expect(run.status == 0, "\(run.stderr)")
        for word in ["status", "import", "check", "fail-on", "metrics-file", "data-dir"] {
            #expect(run.stdout.contains(word), "\(shell): \(word)")
        }
    }

    @Test func anUnknownShellIsAUsageError() throws {
        let run = try AdminProcess.run(["--generate-completion-script", "tcsh"])
        #expect(run.status == 64)
        #expect(run.stderr.contains("tcsh"))
    }
}
