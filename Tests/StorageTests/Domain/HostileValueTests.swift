import Foundation
import PostgresTestSupport
import Testing

@testable import Storage

@Suite("Hostile values")
struct HostileValueTests {
    static let hostile = [
        "'; DROP TABLE users; --", "$1", "$1::text", "back\\slash\\\\", "\"quoted\"", "‘curly’ “quotes”",
        "E'\\x00'", "%_like_%", "line\nbreak\ttab", "null", "{a,b}", "😀 Zoë 中文",
    ]

    @Test func valuesThatLookLikeSQLRoundTripThroughEveryOperation() throws {
        let store = try consistentStore()
        var tree = consistentTree
        let pushIDs = PushIDGenerator()
        let clock = { Date(timeIntervalSince1970: 1_700_000_000) }
        for (index, text) in Self.hostile.enumerated() {
            let uid = "u\(index)"
            _ = try store.addUser(uid: uid, username: text)
            _ = try store.follow(uid, "alice")
            let post = try store.createPost(owner: uid, imageURL: text, imageHeight: 1, pushIDs: pushIDs, now: clock())
                .post
            let sent = try store.sendMessage(from: uid, to: "alice", text: text, pushIDs: pushIDs, clock: clock)
            #expect(try store.user(uid)?.user.username == text)
            #expect(try store.messages(in: sent.chat.key, limit: 1).first?.content == text)
            tree =
                tree
                .setting("users/\(uid)", json(["username": .string(text)]))
                .setting("following/\(uid)/alice", "true").setting("followers/alice/\(uid)", "true")
                .setting("timeline/\(uid)/-Pa1", #"{"poster_uid": "alice"}"#)
                .setting("timeline/\(uid)/\(post.key)", json(["poster_uid": .string(uid)]))
                .setting(
                    "posts/\(uid)/\(post.key)",
                    json([
                        "image_url": .string(text), "image_height": .number(1), "created_at": .number(1_700_000_000),
                        "like_count": .number(0), "poster": .object(["uid": .string(uid), "username": .string(text)]),
                    ]))
            let members: [TreeKey: TreeValue] = ["alice": .bool(true), TreeKey(uid): .bool(true)]
            let copy = json([
                "title": .string("\(text), alice"), "memberHash": .string(ChatMemberHash.stableText(uid, "alice")),
                "members": .object(members), "lastMessage": .string("\(text): \(text)"),
                "lastMessageSent": .number(1_700_000_000),
            ])
            tree = tree.setting("chats/\(uid)/\(sent.chat.key)", copy).setting("chats/alice/\(sent.chat.key)", copy)
                .setting(
                    "messages/\(sent.chat.key)/\(sent.message.key)",
                    json([
                        "content": .string(text), "timestamp": .number(1_700_000_000),
                        "sender": .object(["uid": .string(uid), "username": .string(text)]),
                    ]))
        }
        try expectTree(store, tree)
        try expectCheckClean(store)
    }

    /// A tree value as JSON text, for `TreeValue.setting`.
    private func json(_ children: [TreeKey: TreeValue]) -> String {
        var writer = JSONTextWriter()
        writer.value(.object(children))
        writer.finish()
        return String(decoding: writer.bytes, as: UTF8.self)
    }
}
