import FirebaseTree
import Foundation
import PostgresTestSupport
import Testing
@testable import Storage

/// The paths of stored leaves that have something stored below them: a value Firebase replaced, kept hidden
/// (an unmapped leaf, or a typed `true` of a like or a follow, with unmapped values or typed rows below it, or a
/// typed record at it). The test's own query, written apart from the check's view (migration 0016).
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
        SELECT DISTINCT '/' || l.root || coalesce('/' || nullif(array_to_string(l.path, '/'), ''), '') FROM leaf l
        WHERE EXISTS (
            SELECT FROM node n WHERE n.root = l.root
                AND (cardinality(n.path) > cardinality(l.path) OR n.is_record AND cardinality(n.path) = cardinality(l.path))
                AND n.path[1:cardinality(l.path)] = l.path)
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
        _ = try store.write(write, at: path)
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

    @Test func aDryRunOfAWriteBelowALeafKeepsTheLeaf() throws {
        let store = try store(holding: #"{"q":{"dark":false}}"#)
        _ = try store.importTree(
            from: MemorySource(#"{"k":1}"#), options: ImportOptions(isDryRun: true, at: ["q", "dark", "x"]))
        expectSameText(try exportJSON(store), #"{"q":{"dark":false}}"#)
    }
}
