import FirebaseTree
import Foundation
import PostgresClient
import PostgresTestSupport
import Testing
import TreeTestSupport

@testable import Storage

/// The rows of `post_likes`, `post_keys` and `chat_holders` are what the store's export says they must be: a like
/// has a row per owner of a post with its key, or one row with the owner '' when no post has it, the lookup holds
/// each post's key and owner (migration 0015), and the holders each chat copy's key and user (also 0015). Derived from the exported tree alone (Makestagram's /posts/{uid}/{key}
/// records), not from the SQL that keeps them.
func expectDerivedRowsFollowTheTree(_ store: Store, sourceLocation: SourceLocation = #_sourceLocation) throws {
    // Keys compare as `TreeKey`s, byte for byte: "é" and "e\u{301}" are two keys, which `String` would merge.
    let tree = try TreeValue.parse(json: try exportJSON(store))?.children ?? [:]
    var owners: [TreeKey: [TreeKey]] = [:]
    for (uid, posts) in tree[TreeKey("posts")]?.children ?? [:] {
        for (key, post) in posts.children ?? [:] where post.children != nil { owners[key, default: []].append(uid) }
    }
    var expected: Set<[TreeKey]> = []
    for (key, likers) in tree[TreeKey("postLikes")]?.children ?? [:] {
        for (liker, value) in likers.children ?? [:] where value == .bool(true) {
            for owner in owners[key] ?? [TreeKey("")] { expected.insert([owner, key, liker]) }
        }
    }
    func rows(_ query: Query, columns: Int) throws -> [[TreeKey]] {
        try store.connection.query(query).map { row in
            try (0..<columns).map { TreeKey(try row.decode(String.self, at: $0)) }
        }
    }
    let likes = try rows("SELECT post_owner_uid, post_key, liker_uid FROM post_likes", columns: 3)
    #expect(likes.count == Set(likes).count, sourceLocation: sourceLocation)
    #expect(Set(likes) == expected, sourceLocation: sourceLocation)
    let keys = try rows("SELECT post_key, owner_uid FROM post_keys", columns: 2)
    #expect(Set(keys) == Set(owners.flatMap { key, uids in uids.map { [key, $0] } }), sourceLocation: sourceLocation)
    #expect(keys.count == Set(keys).count, sourceLocation: sourceLocation)
    var copies: Set<[TreeKey]> = []
    for (uid, chats) in tree[TreeKey("chats")]?.children ?? [:] {
        for (key, chat) in chats.children ?? [:] where chat.children != nil { copies.insert([key, uid]) }
    }
    let holders = try rows("SELECT chat_key, uid FROM chat_holders", columns: 2)
    #expect(Set(holders) == copies, sourceLocation: sourceLocation)
}

@Suite("Likes and the post-key lookup follow /posts")
struct PostOwnershipTests {
    /// Key 1 belongs to two users, key 9 to none; key 2 has more likers than a first FETCH takes, three rows each.
    static let tree = """
        {"postLikes": {"1": {"x": true, "y": true}, "2": {\((0..<40).map { "\"u\($0)\": true" }.joined(separator: ", "))},
                       "9": {"z": true, "w": "not a like"}},
         "posts": {"a": {"1": {"like_count": 2}, "2": {"like_count": 40}},
                   "b": {"1": {"like_count": 2}, "2": {"like_count": 40}},
                   "c": {"2": {"like_count": 39}}}}
        """

    @Test func aLikeHasARowPerOwnerOfItsKeyAndIsExportedOnce() throws {
        let store = try makeStore()
        try importJSON(Self.tree, into: store)
        try expectDerivedRowsFollowTheTree(store)
        #expect(
            try store.connection.query("SELECT count(*) FROM post_likes")[0].decode(Int.self, at: 0) == 2 * 2 + 3 * 40
                + 1)
        let exported = try exportJSON(store)
        #expect(try TreeValue.parse(json: exported) == TreeValue.parse(json: Self.tree))
        // Read through cursors (a node below the root), whose batches split a like's three rows.
        var bytes: [UInt8] = []
        _ = try store.exportTree(at: ["postLikes", "2"]) { bytes.append(contentsOf: $0) }
        #expect(try TreeValue.parse(json: String(decoding: bytes, as: UTF8.self))?.children?.count == 40)
        let results = Dictionary(uniqueKeysWithValues: try store.check(examples: 5).map { ($0.check, $0) })
        #expect(results[.likeCount]?.examples == ["/posts/c/2"])
        #expect(results[.orphans]?.examples == ["/postLikes/9/w", "/postLikes/9/z"])
    }

    /// Shapes of real exports: all-digit post keys (the likes and the posts render as arrays) with one key two
    /// owners share, likers whose keys are canonically equivalent but not the same bytes, a push ID that starts
    /// with `-` and holds y and h, a 3 MB value and control characters in text.
    @Test func likesOfRealShapesExportAsTheyCame() throws {
        let photo = String(repeating: "iVBORw0KGgo", count: 300_000)
        let tree = #"""
            {"postLikes": [{"e\u0301": true, "é": true}, {"-Kyh0Ah": true}],
             "posts": {"1": [{"image_url": "\#(photo)", "like_count": 2}, {"like_count": 1}],
                       "2": [{"image_url": "esc\u001b[31m\u0007", "like_count": 2}]}}
            """#
        let store = try makeStore()
        try importJSON(tree, into: store)
        try expectDerivedRowsFollowTheTree(store)
        #expect(try store.connection.query("SELECT count(*) FROM post_likes")[0].decode(Int.self, at: 0) == 5)
        let exported = try exportJSON(store)
        #expect(exported.contains(#""postLikes":[{"#))
        #expect(try TreeValue.parse(json: exported) == TreeValue.parse(json: tree))
        let again = try makeStore()
        try importJSON(exported, into: again)
        expectSameText(try exportJSON(again), exported)
        #expect(try store.check([.likeCount, .orphans]).allSatisfy(\.isClean))
    }

    @Test func writesToPostsMoveTheirLikes() throws {
        let store = try makeStore()
        try importJSON(Self.tree, into: store)
        try Self.writePostsAndLikes(store)
    }

    /// A sync settles the derived rows as an import does (both through `KeptCopies`): each newer file moves,
    /// adds and removes posts, likes and chat copies, synced whole and at a user and a record, and the rows follow
    /// the tree after each.
    @Test func syncsKeepTheDerivedRows() throws {
        let store = try makeStore()
        try importJSON(Self.tree, into: store)
        let versions = [
            // Key 1 leaves a for d, key 7 is new, key 9's likes keep no post; chat c1 gains a holder.
            #"{"postLikes": {"1": {"x": true}, "7": {"q": true}, "9": {"z": true}},"#
                + #""posts": {"b": {"1": {"like_count": 1}}, "d": {"1": {"like_count": 1}, "7": {"like_count": 1}}},"#
                + #""chats": {"u": {"c1": {"title": "t"}}, "v": {"c1": {"title": "t"}}}}"#,
            // Every post of b goes, and u's copy of c1; a chat c2 comes.
            #"{"postLikes": {"1": {"x": true}, "7": {"q": true}}, "posts": {"d": {"1": {"like_count": 1}}},"#
                + #""chats": {"v": {"c1": {"title": "t"}}, "w": {"c2": {"title": "s"}}}}"#,
        ]
        for version in versions {
            _ = try store.sync(opening: { MemorySource(version) })
            try expectDerivedRowsFollowTheTree(store)
        }
        let atPaths: [([String], String)] = [
            (["posts", "e"], #"{"1": {"like_count": 0}, "7": {"like_count": 2}}"#),
            (["posts", "d", "1"], "null"),
            (["chats", "v"], #"{"c2": {"title": "s"}}"#),
        ]
        for (path, json) in atPaths {
            _ = try store.sync(
                opening: { MemorySource(json) }, options: SyncOptions(at: path, allowsEmptying: true))
            try expectDerivedRowsFollowTheTree(store)
        }
    }

    /// Writes that add and remove posts (of one key, one user, all) and likes, each followed by the rows check.
    static func writePostsAndLikes(_ store: Store, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let writes: [(TreeWrite, [String])] = [
            (.set(json: #"{"like_count": 1}"#), ["posts", "d", "9"]),
            (.remove, ["posts", "a"]),
            (.update(json: #"{"1": null, "3": {"like_count": 0}}"#), ["posts", "b"]),
            (.set(json: "7"), ["posts", "c", "2", "like_count"]),
        ]
        for (write, path) in writes {
            _ = try store.write(write, at: path)
            try expectDerivedRowsFollowTheTree(store, sourceLocation: sourceLocation)
        }
        // Firebase's update at the root replaces /posts whole.
        for json in [
            #"{"posts": {"e": {"1": {"like_count": 2}}}}"#, #"{"posts": null, "users": {"x": {"username": "x"}}}"#,
        ] {
            try importJSON(json, into: store, options: ImportOptions(mode: .merge))
            try expectDerivedRowsFollowTheTree(store, sourceLocation: sourceLocation)
        }
        _ = try store.write(
            .set(json: #"{"e": {"2": {"like_count": 1}}, "f": {"2": {"like_count": 40}}}"#), at: ["posts"])
        try expectDerivedRowsFollowTheTree(store, sourceLocation: sourceLocation)
        _ = try store.write(.set(json: #"{"q": true}"#), at: ["postLikes", "2"])
        try expectDerivedRowsFollowTheTree(store, sourceLocation: sourceLocation)
        #expect(
            try store.check([.orphans]).first?.examples == [
                "/postLikes/1/x", "/postLikes/1/y", "/postLikes/9/w", "/postLikes/9/z",
            ],
            sourceLocation: sourceLocation)
    }

    /// The first occurrence is large enough to have gone to the server before the second is read.
    @Test func aRepeatedKeyInTheFileKeepsItsLastValue() throws {
        let store = try makeStore()
        let many = (0..<100_000).map { "\"u\($0)\": true" }.joined(separator: ", ")
        let report = try importJSON(
            #"{"postLikes": {"p": {\#(many)}, "p": {"y": true}}, "posts": {"a": {"p": {"like_count": 1}}}}"#,
            into: store)
        #expect(report.warningCount == 1)
        try expectDerivedRowsFollowTheTree(store)
        #expect(try exportJSON(store) == #"{"postLikes":{"p":{"y":true}},"posts":{"a":{"p":{"like_count":1}}}}"#)
    }

    @Test func theAppsOperationsKeepEveryOwnersRows() throws {
        let store = try makeStore()
        try importJSON(
            #"{"users": {"a": {"username": "a"}, "b": {"username": "b"}, "l": {"username": "l"}}}"#, into: store)
        try importJSON(Self.tree, into: store, options: ImportOptions(mode: .merge))
        #expect(try store.like("l", post: "1") == LikeResult(changed: true, likeCount: 3))
        try expectDerivedRowsFollowTheTree(store)
        #expect(try store.unlike("b", post: "1") == LikeResult(changed: false, likeCount: 3))
        #expect(try store.unlike("l", post: "1") == LikeResult(changed: true, likeCount: 2))
        try expectDerivedRowsFollowTheTree(store)
        // b's post goes; its rows of the shared likes go, and the likes stay for a's post.
        #expect(try store.deletePost(owner: "b", key: "1").map(\.rows) == [1, 0, 0])
        try expectDerivedRowsFollowTheTree(store)
        #expect(try store.deletePost(owner: "a", key: "1").map(\.rows) == [1, 2, 0])
        try expectDerivedRowsFollowTheTree(store)
        // A new post whose key already has likes (from before it existed) takes them. Push IDs made in one
        // millisecond count up, so the post's key is the one after `first`.
        let clock = Date(timeIntervalSince1970: 1_700_000_000)
        let pushIDs = PushIDGenerator(now: { clock })
        let key = Self.pushID(after: pushIDs.next())
        _ = try store.write(.set(json: #"{"l": true}"#), at: ["postLikes", key])
        #expect(try store.check([.orphans]).first?.examples.contains("/postLikes/\(key)/l") == true)
        let created = try store.createPost(owner: "a", imageURL: "u", imageHeight: 1, pushIDs: pushIDs, now: clock)
        #expect(created.post.key == key)
        try expectDerivedRowsFollowTheTree(store)
        #expect(try store.check([.orphans]).first?.examples.contains("/postLikes/\(key)/l") == false)
    }

    /// The push ID one after `key` (its random part counted up by one, in base 64).
    static func pushID(after key: String) -> String {
        var digits = key.utf8.map { PushIDGenerator.alphabet.firstIndex(of: $0)! }
        var index = digits.count - 1
        while digits[index] == 63 {
            digits[index] = 0
            index -= 1
        }
        digits[index] += 1
        return String(decoding: digits.map { PushIDGenerator.alphabet[$0] }, as: UTF8.self)
    }

    /// Two copies of chat c1, one of c2 (held by a non-member), messages of c1, c2 and of c9, which no one holds.
    static let chats = """
        {"chats": {"a": {"c1": {"members": {"a": true, "b": true}, "memberHash": "h"}},
                   "b": {"c1": {"members": {"a": true, "b": true}, "memberHash": "h"},
                         "c2": {"members": {"b": true, "c": true}, "memberHash": "g"}}},
         "messages": {"c1": {"m1": {"content": "hi", "timestamp": 1}}, "c2": {"m2": {"content": "yo", "timestamp": 2}},
                      "c9": {"m9": {"content": "lost", "timestamp": 3}}},
         "users": {"a": {"username": "a"}, "b": {"username": "b"}, "c": {"username": "c"}}}
        """

    @Test func everyWriteToChatsKeepsTheirHolders() throws {
        let store = try makeStore()
        try importJSON(Self.chats, into: store)
        try expectDerivedRowsFollowTheTree(store)
        #expect(try store.check([.orphans]).first?.examples == ["/messages/c9/m9"])
        try Self.writeChats(store)
    }

    /// Writes, operations and repairs that add or remove chat copies, each followed by the holders' check.
    static func writeChats(_ store: Store, sourceLocation: SourceLocation = #_sourceLocation) throws {
        _ = try store.write(.set(json: #"{"members": {"c": true}}"#), at: ["chats", "c", "c9"])
        try expectDerivedRowsFollowTheTree(store, sourceLocation: sourceLocation)
        #expect(try store.check([.orphans]).first?.violations == 0, sourceLocation: sourceLocation)
        _ = try store.write(.remove, at: ["chats", "b"])
        try expectDerivedRowsFollowTheTree(store, sourceLocation: sourceLocation)
        #expect(try store.check([.orphans]).first?.examples == ["/messages/c2/m2"], sourceLocation: sourceLocation)
        _ = try store.write(.update(json: #"{"c2": {"title": "back"}}"#), at: ["chats", "b"])
        _ = try store.write(.set(json: #""renamed""#), at: ["chats", "b", "c2", "title"])
        try expectDerivedRowsFollowTheTree(store, sourceLocation: sourceLocation)
        _ = try store.follow("a", "c")
        let sent = try store.sendMessage(from: "a", to: "c", text: "new chat")
        try expectDerivedRowsFollowTheTree(store, sourceLocation: sourceLocation)
        _ = try store.repair(.chats)
        try expectDerivedRowsFollowTheTree(store, sourceLocation: sourceLocation)
        // A second chat of a and c, held by a alone, merged into the one sent to.
        _ = try store.write(.set(json: #"{"members": {"a": true, "c": true}}"#), at: ["chats", "a", "c8"])
        _ = try store.mergeChats(keep: sent.chat.key, drop: "c8")
        try expectDerivedRowsFollowTheTree(store, sourceLocation: sourceLocation)
        try importJSON(#"{"chats": {"d": {"c7": {"title": "t"}}}}"#, into: store, options: ImportOptions(mode: .merge))
        try expectDerivedRowsFollowTheTree(store, sourceLocation: sourceLocation)
        // Every chat with messages is gone but c7, which has none.
        #expect(try store.check([.orphans]).first?.violations == 4, sourceLocation: sourceLocation)
    }

    @Test func theMigrationGivesAStoresLikesTheirOwners() throws {
        let connection = try TestPostgres.makeEmptyDatabase().connect()
        let store = Store(connection: connection)
        let before = Array(Migration.embedded.prefix { !$0.fileName.hasPrefix("0015") })
        try store.migrate(Migrator(migrations: before))
        try store.connection.execute(
            script: """
                INSERT INTO posts (owner_uid, post_key, like_count) VALUES ('a', '1', 2), ('b', '1', 2), ('a', '2', 1);
                INSERT INTO post_likes (post_key, liker_uid) VALUES ('1', 'x'), ('1', 'y'), ('2', 'x'), ('9', 'z');
                """)
        // What the rows stand for (export needs the current schema, so it reads them after the migration).
        let exported = """
            {"postLikes":{"1":{"x":true,"y":true},"2":{"x":true},"9":{"z":true}},\
            "posts":{"a":[null,{"like_count":2},{"like_count":1}],"b":[null,{"like_count":2}]}}
            """
        try store.migrate()
        try expectDerivedRowsFollowTheTree(store)
        expectSameText(try exportJSON(store), exported)
    }
}
