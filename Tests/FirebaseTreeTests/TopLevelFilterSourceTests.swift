import FirebaseTree
import Foundation
import Testing

/// `import --only/--exclude`'s view of a file: the selected top-level members byte for byte, removals appended.
struct TopLevelFilterSourceTests {
    private func filtered(
        _ text: String, only: Set<String>? = nil, excluded: Set<String> = [], removing: [String] = [],
        chunkSize: Int = .max
    ) throws -> String {
        let selection = try #require(TopLevelSelection(only: only, excluded: excluded))
        var source = TopLevelFilterSource(
            MemorySource(text, chunkSize: chunkSize), selection: selection, removing: removing)
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 7)
        while true {
            let count = try buffer.withUnsafeMutableBytes { try source.read(into: $0) }
            if count == 0 { break }
            bytes += buffer[..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    static let tree = """
        {"users": {"u1": {"username": "a,}\\"]"}}, "posts" : [1, {"x": "}"}], "n": 5, "s": "v}",
         "q\\u0022": null, "t": true}
        """

    @Test func selectedMembersPassThroughAndOthersAreSkipped() throws {
        for chunkSize in [1, 3, 64, .max] {
            #expect(
                try filtered(Self.tree, only: ["users", "n"], chunkSize: chunkSize)
                    == #"{"users":{"u1": {"username": "a,}\"]"}},"n":5}"#)
            #expect(
                try filtered(Self.tree, excluded: ["users", "posts"], chunkSize: chunkSize)
                    == #"{"n":5,"s":"v}","q\u0022":null,"t":true}"#)
        }
        // An escaped key is compared by its text.
        #expect(try filtered(Self.tree, only: ["q\""]) == #"{"q\u0022":null}"#)
    }

    @Test func selectedNodesTheFileLacksAreNamedAsNull() throws {
        #expect(
            try filtered(Self.tree, only: ["users", "chats", "timeline"], removing: ["chats", "followers", "users"])
                == #"{"users":{"u1": {"username": "a,}\"]"}},"chats":null}"#)
        #expect(try filtered("{}", excluded: ["x"], removing: ["a", "x"]) == #"{"a":null}"#)
    }

    @Test(arguments: ["[1, 2]", "5", #"{"a": 1"#, #"{"a" 1}"#, #"{"a": [1}"#, ""])
    func whatIsNoObjectIsRefused(_ text: String) {
        #expect(throws: TreeError.self) { try filtered(text, only: ["a"]) }
    }
}
