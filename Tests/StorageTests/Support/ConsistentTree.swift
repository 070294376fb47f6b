import Foundation

@testable import Storage

/// A small Makestagram tree in which every hand-kept copy agrees: alice follows bob, carol follows both, and
/// alice and bob chat.
let consistentTree: TreeValue = {
    let hash = ChatMemberHash.stableText("alice", "bob")
    let json = """
        {
          "users": {"alice": {"username": "alice"}, "bob": {"username": "bob"}, "carol": {"username": "carol"}},
          "following": {"alice": {"bob": true}, "carol": {"alice": true, "bob": true}},
          "followers": {"bob": {"alice": true, "carol": true}, "alice": {"carol": true}},
          "posts": {
            "alice": {"-Pa1": {"image_url": "https://i/a1.jpg", "image_height": 320, "created_at": 1500000000.5,
                               "like_count": 1, "poster": {"uid": "alice", "username": "alice"}}},
            "bob": {"-Pb1": {"image_url": "https://i/b1.jpg", "image_height": 240, "created_at": 1500000100,
                             "like_count": 2, "poster": {"uid": "bob", "username": "bob"}},
                    "-Pb2": {"image_url": "https://i/b2.jpg", "image_height": 240, "created_at": 1500000200,
                             "like_count": 0, "poster": {"uid": "bob", "username": "bob"}}}
          },
          "postLikes": {"-Pa1": {"bob": true}, "-Pb1": {"alice": true, "carol": true}},
          "timeline": {
            "alice": {"-Pa1": {"poster_uid": "alice"}, "-Pb1": {"poster_uid": "bob"}, "-Pb2": {"poster_uid": "bob"}},
            "bob": {"-Pb1": {"poster_uid": "bob"}, "-Pb2": {"poster_uid": "bob"}},
            "carol": {"-Pa1": {"poster_uid": "alice"}, "-Pb1": {"poster_uid": "bob"}, "-Pb2": {"poster_uid": "bob"}}
          },
          "chats": {
            "alice": {"-Ch1": {"title": "alice, bob", "memberHash": "\(hash)", "members": {"alice": true, "bob": true},
                               "lastMessage": "bob: hi", "lastMessageSent": 1500000020}},
            "bob": {"-Ch1": {"title": "alice, bob", "memberHash": "\(hash)", "members": {"alice": true, "bob": true},
                             "lastMessage": "bob: hi", "lastMessageSent": 1500000020}}
          },
          "messages": {"-Ch1": {
            "-M1": {"content": "hello", "timestamp": 1500000010, "sender": {"uid": "alice", "username": "alice"}},
            "-M2": {"content": "hi", "timestamp": 1500000020, "sender": {"uid": "bob", "username": "bob"}}
          }}
        }
        """
    // A literal of the test's own: a parse failure is a bug in this file, worth a crash with its message.
    do { return try TreeValue.parse(json: json)! } catch { fatalError("consistentTree: \(error)") }
}()

/// Timelines damaged beyond the injections: an entry naming another poster than the post's owner or none, a key
/// two owners share, a follow kept as an unmapped value (the timeline checks' and repair's edge cases).
let damagedTimelines: [(String, TreeValue)] = [
    (
        "posters wrong or absent",
        consistentTree.setting("timeline/carol/-Pb1", #"{"poster_uid": "alice"}"#)
            .setting("timeline/carol/-Pb2", #"{"seen": true}"#)
            .setting("timeline/bob/-Pb2", #"{"poster_uid": "nobody"}"#)
    ),
    (
        "a key two owners share",
        consistentTree.setting("posts/alice/-Pb1", #"{"image_url": "https://i/x.jpg"}"#)
            .setting("timeline/carol/-Pb1", #"{"poster_uid": "alice"}"#)
            .removing("timeline/alice/-Pb1")
    ),
    (
        "a follow kept as an unmapped value",
        consistentTree.setting("following/bob/alice", #""yes""#).removing("timeline/bob/-Pa1")
    ),
]

extension TreeValue {
    /// The tree with the node at `path` (`a/b/c`) removed.
    func removing(_ path: String) -> TreeValue {
        removing(path.split(separator: "/").map(String.init)) ?? .object([:])
    }

    /// This tree without the node at `path`, and without the objects that leaves empty (as Firebase drops them).
    func removing(_ path: some Collection<String>) -> TreeValue? {
        guard let key = path.first else { return nil }
        guard var children = self.children, let child = children[key] else { return self }
        children[key] = child.removing(path.dropFirst())
        return children.isEmpty ? nil : .object(children)
    }

    /// The tree with `value` (JSON) at `path`.
    func setting(_ path: String, _ json: String) -> TreeValue {
        var tree = self
        do {
            tree.set(try TreeValue.parse(json: json)!, at: path.split(separator: "/").map(String.init)[...])
        } catch {
            fatalError("setting \(path) to \(json): \(error)")
        }
        return tree
    }

    /// The tree as compact JSON.
    var json: String {
        var writer = JSONTextWriter(options: .init())
        writer.value(self)
        return String(decoding: writer.bytes, as: UTF8.self)
    }
}

/// `consistentTree` plus an older duplicate of alice and bob's chat, `-Ch0`, with the app's unreproducible hash.
let treeWithDuplicateChat =
    consistentTree
    .setting(
        "chats/alice/-Ch0",
        """
        {"title": "alice, bob", "memberHash": "-42", "members": {"alice": true, "bob": true},
         "lastMessage": "alice: old", "lastMessageSent": 1400000000}
        """
    )
    .setting(
        "chats/bob/-Ch0",
        """
        {"title": "alice, bob", "memberHash": "-42", "members": {"alice": true, "bob": true},
         "lastMessage": "alice: old", "lastMessageSent": 1400000000}
        """
    )
    .setting(
        "messages/-Ch0/-M0",
        #"{"content": "old", "timestamp": 1400000000, "sender": {"uid": "alice", "username": "alice"}}"#)
