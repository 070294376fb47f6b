import FirebaseTree
import Testing

@testable import Storage

/// `import --only/--exclude`: the selected top-level nodes replaced whole, every other node of the store left.
struct ImportSelectionTests {
    static let store =
        #"{"chats":{"u1":{"-C1":{"title":"t"}}},"posts":{"u1":{"-P1":{"image_url":"a"}}},"users":{"u1":{"username":"ana"}}}"#
    static let file = #"{"posts":{"u2":{"-P2":{"image_url":"b"}}},"q":[1,2],"users":{"u2":{"username":"bo"}}}"#

    private func imported(_ options: ImportOptions) throws -> String {
        let store = try makeStore()
        try importJSON(Self.store, into: store)
        try importJSON(Self.file, into: store, options: options)
        return try exportJSON(store)
    }

    private func options(only: Set<String>? = nil, excluded: Set<String> = [], mode: ImportOptions.Mode = .replace)
        -> ImportOptions
    {
        var options = ImportOptions(mode: mode)
        options.topLevel = TopLevelSelection(only: only, excluded: excluded)
        return options
    }

    @Test func onlyReplacesTheNamedNodesAndRemovesThoseTheFileLacks() throws {
        expectSameText(
            try imported(options(only: ["users", "q", "chats"])),
            #"{"posts":{"u1":{"-P1":{"image_url":"a"}}},"q":[1,2],"users":{"u2":{"username":"bo"}}}"#)
        // Merged, a named node the file lacks stays.
        expectSameText(
            try imported(options(only: ["users", "chats"], mode: .merge)),
            #"{"chats":{"u1":{"-C1":{"title":"t"}}},"posts":{"u1":{"-P1":{"image_url":"a"}}},"users":{"u2":{"username":"bo"}}}"#
        )
    }

    @Test func excludeKeepsTheExcludedNodesOfTheStore() throws {
        expectSameText(
            try imported(options(excluded: ["posts"])),
            #"{"posts":{"u1":{"-P1":{"image_url":"a"}}},"q":[1,2],"users":{"u2":{"username":"bo"}}}"#)
    }

    @Test func aSelectionIsRefusedBelowTheRoot() throws {
        var options = options(only: ["users"])
        options.at = ["users"]
        let store = try makeStore()
        #expect(throws: StorageError.self) { try importJSON("{}", into: store, options: options) }
    }
}
