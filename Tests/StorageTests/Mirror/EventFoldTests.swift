import FirebaseTree
import Testing
import TreeTestSupport

@testable import Storage

/// A transaction's events folded into the nodes they change: writing the nodes leaves what writing the events in
/// order leaves, whatever the order the nodes are written in.
struct EventFoldTests {
    /// A random path of one to three keys out of three (so that paths meet, nest and repeat).
    private static func path(_ random: inout SeededGenerator) -> [String] {
        (0..<Int.random(in: 1...3, using: &random)).map { _ in ["a", "b", "c"].randomElement(using: &random) ?? "a" }
    }

    /// A leaf, a small object, or nil (a removal).
    private static func value(_ random: inout SeededGenerator) -> TreeValue? {
        switch Int.random(in: 0..<4, using: &random) {
        case 0: return nil
        case 1: return .number(Double(Int.random(in: 0..<9, using: &random)))
        case 2: return .object([TreeKey(path(&random)[0]): .string("x")])
        default: return .object([TreeKey(path(&random)[0]): .object(["d": .bool(true)]), "e": .number(1)])
        }
    }

    @Test func writingTheFoldedNodesLeavesWhatTheEventsLeave() {
        var random = SeededGenerator(state: 7)
        var eventByEvent = 0
        for _ in 0..<30_000 {
            var tree: TreeValue? = nil
            for _ in 0..<Int.random(in: 0..<4, using: &random) {
                tree = TreeValue.setting(Self.value(&random), at: Self.path(&random), in: tree)
            }
            let before = tree
            var fold = EventFold()
            for _ in 0..<Int.random(in: 1..<8, using: &random) {
                let (value, path) = (Self.value(&random), Self.path(&random))
                tree = TreeValue.setting(value, at: path, in: tree)
                fold.set(value, at: path)
            }
            guard !fold.needsEventByEvent else {
                eventByEvent += 1
                continue
            }
            var folded = before
            for (path, node) in fold.nodes.shuffled(using: &random) {
                folded = TreeValue.setting(node.value, at: path.map(\.string), in: folded)
            }
            #expect(TreeImport.json(folded) == TreeImport.json(tree), "from \(TreeImport.json(before))")
        }
        // Rare, and written event by event: a value written below a leaf, then removed.
        #expect(eventByEvent > 0 && eventByEvent < 6_000)
    }

    @Test func nodesUnderOneParentAreOneMerge() throws {
        var fold = EventFold()
        try fold.patch(#"{"u1/username": "ana", "u2/username": "bo"}"#, at: ["users"])
        try fold.put(#"{"username": "cy"}"#, at: ["users", "u3"])
        try fold.put("null", at: ["users", "u4"])
        try fold.put(#""again""#, at: ["users", "u1", "username"])
        try fold.put("7", at: ["misc"])
        let writes = fold.nodeWrites.map { "\($0.mode) /\($0.path.joined(separator: "/")) \($0.json)" }
        #expect(
            writes == [
                "replace /misc 7",
                #"merge /users {"u3":{"username":"cy"},"u4":null}"#,
                #"replace /users/u1/username "again""#,
                #"replace /users/u2/username "bo""#,
            ])
    }

    @Test func aRemovalAfterAWriteBelowALeafIsWrittenEventByEvent() {
        var fold = EventFold()
        fold.set(.number(1), at: ["x", "a", "b"])
        fold.set(nil, at: ["y"])
        #expect(!fold.needsEventByEvent)
        // Firebase removed a leaf at /x when /x/a/b was written; /x/a's removal alone would not.
        fold.set(nil, at: ["x", "a"])
        #expect(fold.needsEventByEvent)
        // The same through a node removed first: the value written inside it, then removed, still cleared /y.
        var inside = EventFold()
        inside.set(nil, at: ["y", "b"])
        inside.set(.number(1), at: ["y", "b", "c"])
        inside.set(nil, at: ["y", "b", "c"])
        #expect(inside.needsEventByEvent)
    }
}
