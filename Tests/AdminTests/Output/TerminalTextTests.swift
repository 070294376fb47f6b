import Testing

@testable import Admin

@Suite("Terminal text")
struct TerminalTextTests {
    @Test func controlsAreShownNotObeyed() {
        #expect(TerminalText.escaped("a\u{1B}]0;x\u{07}b\t\u{202E}") == #"a\u001b]0;x\u0007b\t\u202e"#)
        // Messages keep their lines and libpq's tab-indented second lines; every other control is still shown.
        #expect(
            TerminalText.escaped("refused\n\tIs the server running?\r\u{1B}[2J", keepingNewlines: true)
                == "refused\n\tIs the server running?\\r\\u001b[2J")
    }
}
