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

    /// The manual is ASCII (characters beyond it by troff's names), so that `man` renders it without a warning
    /// in the C locale (a server with LANG unset) as in a UTF-8 one.
    @Test func theManualPageRendersCleanlyInTheCAndAUTF8Locale() throws {
        let run = try AdminProcess.run(["--generate-manual"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.unicodeScalars.allSatisfy { $0.isASCII })
        #expect(run.stdout.contains("\\(em") || run.stdout.contains("..."), "the text's own … and — are still there")
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/man") else { return }
        let directory = try makeTemporaryDirectory("admin-manual")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let page = directory + "/admin.1"
        try run.stdout.write(toFile: page, atomically: true, encoding: .utf8)
        for locale in ["C", "C.UTF-8"] {
            let rendered = try AdminProcess.runShell(
                "man --warnings -l \(page) > /dev/null", input: "",
                environment: ["LANG": locale, "LC_ALL": locale, "PATH": "/usr/bin:/bin", "MANWIDTH": "80"],
                directory: directory)
            #expect(rendered.status == 0, "\(locale): \(rendered.stderr)")
            #expect(rendered.stderr.isEmpty, "\(locale): \(rendered.stderr)")
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
