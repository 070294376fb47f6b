import Testing

@testable import Admin

@Suite("Firebase paths as the console reads them")
struct FirebasePathTests {
    @Test func keysAreSplitOnSlashesByScalarsNotCharacters() throws {
        // "/" followed by a combining mark is one Character: split by Characters, the key swallowed the slash.
        #expect(try FirebasePath.keys(of: "/q/\u{301}x") == ["q", "\u{301}x"])
        #expect(try FirebasePath.keys(of: "q/\u{301}/\u{301}\u{301}/") == ["q", "\u{301}", "\u{301}\u{301}"])
        #expect(try FirebasePath.keys(of: "/") == [])
        #expect(try FirebasePath.keys(of: "//a//b") == ["a", "b"])
    }
}
