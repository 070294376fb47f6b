import Foundation
import PostgresTestSupport
import Testing

@testable import Admin

@Suite("Tab completion")
struct CompleterTests {
    private func completer() throws -> Completer {
        let database = try databaseHolding(
            #"{"users": {"alice": {"username": "a"}, "albert": {"username": "b"}, "bob": {"username": "c"}}, "settings": {"theme": "dark"}}"#
        )
        let session = Session(
            target: .conninfo(database.conninfo), migratesOnConnect: true, format: .table, isQuiet: true)
        _ = try session.store()
        return Completer(session: session)
    }

    private func words(_ completion: Completion) -> [String] {
        switch completion {
        case .words(let words), .prefixes(let words): words.sorted()
        case .files: []
        }
    }

    @Test func commandsSubcommandsOptionsAndValues() throws {
        let completer = try completer()
        #expect(words(completer.complete(wordsBefore: "", word: "ti")).contains("timeline"))
        #expect(words(completer.complete(wordsBefore: "help ", word: "")).contains("chat"))
        #expect(words(completer.complete(wordsBefore: "chat ", word: "")) == ["merge", "open", "send"])
        #expect(words(completer.complete(wordsBefore: "timeline alice ", word: "--")).contains("--limit"))
        #expect(
            words(completer.complete(wordsBefore: "users --format ", word: "")) == ["csv", "expanded", "json", "table"])
        #expect(completer.complete(wordsBefore: "import ", word: "back") == .files)
        #expect(words(completer.complete(wordsBefore: "check --only ", word: "like")).contains("like_count"))
        #expect(
            words(completer.complete(wordsBefore: "check --only ", word: "poster,time"))
                .contains("poster,timeline_missing"))
        #expect(words(completer.complete(wordsBefore: "", word: "\\")).contains("\\timing"))
        // readline breaks words at a backslash: `\tim` asks for the word `tim` after it.
        #expect(words(completer.complete(wordsBefore: "\\", word: "")).contains("timing"))
        #expect(words(completer.complete(wordsBefore: "\\", word: "se")).contains("set"))
        #expect(completer.complete(wordsBefore: "\\i ", word: "scr") == .files)
        #expect(words(completer.complete(wordsBefore: "chat merge ", word: "--k")).contains("--keep"))
    }

    @Test func fileNamesEndADirectoryWithASlash() throws {
        let directory = try makeTemporaryDirectory("admin-complete")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: directory + "/exports", withIntermediateDirectories: true)
        for file in ["export.json", ".hidden.json", "exports/a.json"] {
            _ = FileManager.default.createFile(atPath: directory + "/" + file, contents: Data())
        }
        #expect(
            Completer.fileNames(matching: directory + "/exp") == [directory + "/export.json", directory + "/exports/"])
        #expect(Completer.fileNames(matching: directory + "/exports/") == [directory + "/exports/a.json"])
        #expect(
            Completer.fileNames(matching: directory + "/") == [directory + "/export.json", directory + "/exports/"])
        #expect(Completer.fileNames(matching: directory + "/.h") == [directory + "/.hidden.json"])
        #expect(Completer.fileNames(matching: directory + "/nothing/x").isEmpty)
        #expect(Completer.fileNames(matching: directory + "/exp", limit: 1) == [directory + "/export.json"])
        #expect(try completer().complete(wordsBefore: "sync ", word: "x") == .files)
    }

    @Test func uidsAndPathsFromTheStore() throws {
        let completer = try completer()
        #expect(words(completer.complete(wordsBefore: "user show ", word: "al")) == ["albert", "alice"])
        #expect(words(completer.complete(wordsBefore: "follow alice ", word: "b")) == ["bob"])
        #expect(words(completer.complete(wordsBefore: "chat send --from ", word: "bo")) == ["bob"])
        #expect(words(completer.complete(wordsBefore: "timeline --limit 5 ", word: "al")) == ["albert", "alice"])
        #expect(words(completer.complete(wordsBefore: "timeline alice ", word: "al")).isEmpty)
        #expect(completer.complete(wordsBefore: "get ", word: "/") == .prefixes(["/settings", "/users"]))
        // A unique node with children completes as a directory does, so that Tab again lists them.
        #expect(completer.complete(wordsBefore: "get ", word: "/us") == .prefixes(["/users/"]))
        #expect(completer.complete(wordsBefore: "set ", word: "/set") == .prefixes(["/settings/"]))
        #expect(words(completer.complete(wordsBefore: "get ", word: "/users/al")) == ["/users/albert", "/users/alice"])
        #expect(words(completer.complete(wordsBefore: "get ", word: "users/b")) == ["users/bob/"])
        #expect(words(completer.complete(wordsBefore: "get ", word: "se")) == ["settings/"])
        #expect(
            words(completer.complete(wordsBefore: "export x.json --path ", word: "/settings/")) == ["/settings/theme"])
        #expect(words(completer.complete(wordsBefore: "get ", word: "/users/alice/")) == ["/users/alice/username"])
    }
}
