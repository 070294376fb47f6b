import FirebaseTree
import Foundation
import PostgresTestSupport
import Testing
import TreeTestSupport

@testable import Storage

/// The paths of stored leaves that have something stored below them: a value Firebase replaced, kept hidden
/// (an unmapped leaf, or a typed `true` of a like or a follow, with unmapped values or typed rows below it, or a
/// typed record at it, or a leaf with a priority with children beside its `.value`). The test's own query,
/// written apart from the check's view (migrations 0016 and 0017).
func hiddenValues(_ store: Store) throws -> [String] {
    try store.connection.query(
        """
        WITH leaf(root, path) AS (
            SELECT root, path FROM unmapped_values
            UNION ALL SELECT 'postLikes', ARRAY[post_key, liker_uid] COLLATE "C" FROM post_likes
            UNION ALL SELECT 'followers', ARRAY[uid, follower_uid] COLLATE "C" FROM followers
            UNION ALL SELECT 'following', ARRAY[uid, followee_uid] COLLATE "C" FROM following),
        node(root, path, is_record) AS (
            SELECT root, path, false FROM leaf
            UNION ALL SELECT 'users', ARRAY[uid] COLLATE "C", true FROM users
            UNION ALL SELECT 'posts', ARRAY[owner_uid, post_key] COLLATE "C", true FROM posts
            UNION ALL SELECT 'posts', ARRAY[post_id] COLLATE "C", true FROM feed_posts
            UNION ALL SELECT 'timeline', ARRAY[uid, post_key] COLLATE "C", true FROM timeline
            UNION ALL SELECT 'chats', ARRAY[uid, chat_key] COLLATE "C", true FROM chats
            UNION ALL SELECT 'messages', ARRAY[chat_key, message_key] COLLATE "C", true FROM messages)
        SELECT '/' || l.root || coalesce('/' || nullif(array_to_string(l.path, '/'), ''), '') FROM leaf l
        WHERE EXISTS (
            SELECT FROM node n WHERE n.root = l.root
                AND (cardinality(n.path) > cardinality(l.path) OR n.is_record AND cardinality(n.path) = cardinality(l.path))
                AND n.path[1:cardinality(l.path)] = l.path)
        UNION
        -- A leaf with a priority (NODE/.value beside NODE/.priority) with a child of NODE beside it.
        SELECT '/' || v.root || '/' || array_to_string(v.path, '/') FROM unmapped_values v
        WHERE v.path[cardinality(v.path)] = '.value' AND EXISTS (
            SELECT FROM node n WHERE n.root = v.root AND cardinality(n.path) >= cardinality(v.path)
                AND n.path[1:cardinality(v.path) - 1] = v.path[1:cardinality(v.path) - 1]
                AND n.path[cardinality(v.path)] NOT IN ('.value', '.priority'))
        ORDER BY 1
        """
    ).map { try $0.decode(String.self, at: 0) }
}

/// Writes below, into and beside leaves, as Firebase applies them: a write below a leaf replaces it, and a
/// removal below one changes nothing.
@Suite("Writes into and under leaves")
struct WriteTests {
    private func store(holding json: String) throws -> Store {
        let store = try makeStore()
        try importJSON(json, into: store)
        return store
    }

    /// Writes, then expects the export (valid JSON, each key once) and no hidden value.
    private func expect(
        _ store: Store, after write: TreeWrite, at path: [String], exports expected: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        _ = try store.write(write, at: path, allowsEmptying: true)
        let exported = try exportJSON(store)
        expectSameText(exported, expected, sourceLocation: sourceLocation)
        // Parsed and written again, a key given twice would come out once.
        var writer = JSONTextWriter()
        if let tree = try TreeValue.parse(json: exported, normalizing: false) {
            writer.value(tree)
        } else {
            writer.null()
        }
        expectSameText(String(decoding: writer.bytes, as: UTF8.self), exported, sourceLocation: sourceLocation)
        #expect(try hiddenValues(store) == [], sourceLocation: sourceLocation)
    }

    @Test func aLeafWrittenBelowIsReplacedAndDoesNotComeBack() throws {
        let store = try store(holding: #"{"q":{"flags":{"dark":false}},"u":{"7":29920.3}}"#)
        try expect(
            store, after: .set(json: #""v""#), at: ["q", "flags", "dark", "k"],
            exports: #"{"q":{"flags":{"dark":{"k":"v"}}},"u":{"7":29920.3}}"#)
        try expect(store, after: .remove, at: ["q", "flags", "dark", "k"], exports: #"{"u":{"7":29920.3}}"#)
        try expect(store, after: .set(json: "true"), at: ["u", "7", "0"], exports: #"{"u":{"7":[true]}}"#)
        try expect(store, after: .remove, at: ["u", "7", "0"], exports: "null")
    }

    @Test func anUpdateOrAPushIntoALeafReplacesIt() throws {
        let store = try store(holding: #"{"u":{"7":29920.3,"8":"x"}}"#)
        try expect(store, after: .update(json: #"{"a":1}"#), at: ["u", "7"], exports: #"{"u":{"7":{"a":1},"8":"x"}}"#)
        _ = try store.write(.push(json: "2"), at: ["u", "8"])
        #expect(try hiddenValues(store) == [])
        #expect(try !exportJSON(store).contains(#""x""#), "the pushed child replaced the leaf")
    }

    @Test func aTypedLikeOrFollowWrittenBelowIsReplaced() throws {
        let store = try store(holding: #"{"followers":{"a":{"b":true}},"postLikes":{"-P":{"u":true}}}"#)
        try expect(
            store, after: .update(json: #"{"c":1}"#), at: ["followers", "a", "b"],
            exports: #"{"followers":{"a":{"b":{"c":1}}},"postLikes":{"-P":{"u":true}}}"#)
        try expect(
            store, after: .set(json: "1"), at: ["postLikes", "-P", "u", "n"],
            exports: #"{"followers":{"a":{"b":{"c":1}}},"postLikes":{"-P":{"u":{"n":1}}}}"#)
        #expect(try store.connection.query("SELECT count(*) FROM post_likes")[0].decode(Int.self, at: 0) == 0)
    }

    @Test func removingBelowALeafChangesNothing() throws {
        let tree =
            #"{"chats":{"U":{"C":{"members":{"U":true,"V":true},"title":"t"}}},"q":{"dark":false}}"#
        let store = try store(holding: tree)
        try expect(store, after: .remove, at: ["q", "dark", "k"], exports: tree)
        try expect(store, after: .set(json: "null"), at: ["q", "dark", "k", "deeper"], exports: tree)
        try expect(store, after: .update(json: #"{"k":null}"#), at: ["q", "dark"], exports: tree)
        // Inside a typed record (a chat copy), as on an unmapped node.
        try expect(store, after: .set(json: "null"), at: ["chats", "U", "C", "title", "x"], exports: tree)
        try expect(store, after: .remove, at: ["chats", "U", "C", "members", "U", "x"], exports: tree)
    }

    /// A `.value` beside other children, or a priority that is no leaf, is refused by every write verb as import
    /// refuses it, naming the child's whole path; nothing changes (the children were dropped silently before).
    @Test(arguments: [
        (TreeWrite.set(json: #"{".value": 1, "a": 2}"#), ["x", "y"], "/x/y/a", "cannot have children"),
        (.set(json: #"{"n": {"a": 2, ".value": 1}}"#), ["x"], "/x/n/a", "cannot have children"),
        (.set(json: #"{".value": {"a": 1}}"#), ["x", "y"], "/x/y/.value", "must be a leaf"),
        (.update(json: #"{"y": {".value": 1, "a": 2}}"#), ["x"], "/x/y/a", "cannot have children"),
        (.update(json: #"{"y/z": {".priority": {"p": 1}, "a": 2}}"#), ["x"], "/x/y/z/.priority", "string or a number"),
        (.push(json: #"{".value": "v", ".priority": 1, "b": true}"#), ["x"], "/b", "cannot have children"),
    ])
    func aValueBesideChildrenIsRefusedByEveryVerb(write: TreeWrite, at path: [String], named: String, reason: String)
        throws
    {
        let tree = #"{"x":{"y":"kept"}}"#
        let store = try store(holding: tree)
        let error = #expect(throws: StorageError.self) { try store.write(write, at: path) }
        #expect(error?.message.contains(named) == true, "\(String(describing: error))")
        #expect(error?.message.contains(reason) == true, "\(String(describing: error))")
        expectSameText(try exportJSON(store), tree)
        // A leaf with its priority, which import keeps too, is written.
        _ = try store.write(.set(json: #"{".value": 1, ".priority": 2}"#), at: ["x", "y"])
        expectSameText(try exportJSON(store), #"{"x":{"y":{".value":1,".priority":2}}}"#)
    }

    @Test func aDryRunOfAWriteBelowALeafKeepsTheLeaf() throws {
        let store = try store(holding: #"{"q":{"dark":false}}"#)
        _ = try store.importTree(
            from: MemorySource(#"{"k":1}"#), options: ImportOptions(isDryRun: true, at: ["q", "dark", "x"]))
        expectSameText(try exportJSON(store), #"{"q":{"dark":false}}"#)
    }
}

/// Random set, update and remove at random paths of a few short keys, under an unmapped root and under
/// /followers (whose `true` leaves are typed rows), against a small model of the Realtime Database written here:
/// after each write the export is the model's tree and no value is hidden.
@Suite("Writes into and under leaves, at random")
struct RandomWriteTests {
    /// The Realtime Database's tree, as far as these writes go: a leaf or an object of children, never empty.
    indirect enum Node: Equatable {
        case leaf(String)
        case object([String: Node])

        /// The tree after `value` (nil: removed) is set at `path` below it (nil when nothing is left).
        static func setting(_ value: Node?, at path: ArraySlice<String>, in node: Node?) -> Node? {
            guard let key = path.first else { return value }
            if value == nil, case .leaf? = node { return node }  // nothing there to remove
            var children: [String: Node] = [:]
            if case .object(let existing)? = node { children = existing }  // a leaf written below is replaced
            children[key] = setting(value, at: path.dropFirst(), in: children[key])
            return children.isEmpty ? nil : .object(children)
        }

        /// The JSON text of the tree (leaves hold their JSON text already).
        var json: String {
            switch self {
            case .leaf(let text): text
            case .object(let children):
                "{" + children.keys.sorted().map { "\"\($0)\":" + children[$0]!.json }.joined(separator: ",") + "}"
            }
        }
    }

    @Test(arguments: 0..<12)
    func randomWritesLeaveWhatFirebaseWould(seed: UInt64) throws {
        var random = SeededGenerator(state: seed)
        let store = try makeStore()
        var model: Node?
        let leaves = ["true", "1", "\"s\"", "false"]
        var steps: [String] = []
        for _ in 0..<25 {
            let root = ["q", "followers"].randomElement(using: &random)!
            let path =
                [root]
                + (0..<Int.random(in: 1...3, using: &random)).map { _ in
                    ["a", "b", "c"].randomElement(using: &random)!
                }
            let leaf = leaves.randomElement(using: &random)!
            let write: TreeWrite
            switch Int.random(in: 0..<4, using: &random) {
            case 0:
                write = .set(json: leaf)
                model = Node.setting(.leaf(leaf), at: path[...], in: model)
            case 1:
                write = .set(json: "{\"c\":\(leaf)}")
                model = Node.setting(.object(["c": .leaf(leaf)]), at: path[...], in: model)
            case 2:
                let child = ["a", "b"].randomElement(using: &random)!
                let removes = Bool.random(using: &random)
                write = .update(json: "{\"\(child)\":\(removes ? "null" : leaf)}")
                model = Node.setting(removes ? nil : .leaf(leaf), at: (path + [child])[...], in: model)
            default:
                write = .remove
                model = Node.setting(nil, at: path[...], in: model)
            }
            steps.append("\(write) at /\(path.joined(separator: "/"))")
            _ = try store.write(write, at: path)
            let exported = try exportJSON(store)
            let expected = model?.json ?? "null"
            guard exported == expected, try hiddenValues(store).isEmpty else {
                Issue.record(
                    """
                    seed \(seed), after \(steps.count) writes:
                    \(steps.joined(separator: "\n"))
                    export: \(exported)
                    model:  \(expected)
                    hidden: \(try hiddenValues(store))
                    """)
                return
            }
        }
    }
}
