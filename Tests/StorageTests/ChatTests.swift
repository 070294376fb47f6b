import Foundation
import PostgresTestSupport
import Testing
@testable import Storage

@Suite("Chats and their realtime events")
struct ChatTests {
    /// `consistentTree` plus an older duplicate of alice and bob's chat, `-Ch0`, with the app's unreproducible hash.
    private let treeWithDuplicate =
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

    @Test func sendingWritesWhatTheAppWould() throws {
        let store = try consistentStore()
        var tree = consistentTree
        let pushIDs = PushIDGenerator()
        let clock = { Date(timeIntervalSince1970: 1_700_000_000.5) }

        // carol follows bob and has no chat with him: the first message creates one, a copy for each member.
        let first = try store.sendMessage(from: "carol", to: "bob", text: "hey", pushIDs: pushIDs, clock: clock)
        #expect(first.createdChat)
        let chat = first.chat.key
        let copy = """
            {"title": "carol, bob", "memberHash": "\(ChatMemberHash.stableText("bob", "carol"))",
             "members": {"bob": true, "carol": true}, "lastMessage": "carol: hey", "lastMessageSent": 1700000000.5}
            """
        tree = tree.setting("chats/carol/\(chat)", copy).setting("chats/bob/\(chat)", copy)
            .setting(
                "messages/\(chat)/\(first.message.key)",
                """
                {"content": "hey", "timestamp": 1700000000.5, "sender": {"uid": "carol", "username": "carol"}}
                """)
        try expectTree(store, tree)

        // The second message goes into the same chat and becomes every copy's last message.
        let second = try store.sendMessage(from: "carol", to: "bob", text: "you there?", pushIDs: pushIDs, clock: clock)
        #expect(!second.createdChat && second.chat.key == chat)
        tree = tree.setting(
            "messages/\(chat)/\(second.message.key)",
            """
            {"content": "you there?", "timestamp": 1700000000.5, "sender": {"uid": "carol", "username": "carol"}}
            """)
        for uid in ["carol", "bob"] {
            tree = tree.setting("chats/\(uid)/\(chat)/lastMessage", #""carol: you there?""#)
        }
        try expectTree(store, tree)

        // alice and bob already have -Ch1, from the import.
        let third = try store.sendMessage(from: "alice", to: "bob", text: "lunch?", pushIDs: pushIDs, clock: clock)
        #expect(third.chat.key == "-Ch1" && !third.createdChat)
        #expect(third.chat.lastMessage == "alice: lunch?")
        tree = tree.setting(
            "messages/-Ch1/\(third.message.key)",
            """
            {"content": "lunch?", "timestamp": 1700000000.5, "sender": {"uid": "alice", "username": "alice"}}
            """)
        for uid in ["alice", "bob"] {
            tree = tree.setting("chats/\(uid)/-Ch1/lastMessage", #""alice: lunch?""#)
                .setting("chats/\(uid)/-Ch1/lastMessageSent", "1700000000.5")
        }
        try expectTree(store, tree)
        try expectCheckClean(store)
    }

    @Test func aMissingCopyIsWrittenAgainByTheNextMessage() throws {
        let store = try consistentStore(consistentTree.removing("chats/bob"))
        let sent = try store.sendMessage(from: "alice", to: "bob", text: "still there?")
        #expect(sent.chat.key == "-Ch1")
        try expectCheckClean(store)
    }

    @Test func refusalsWriteNothing() throws {
        let store = try consistentStore()
        let before = try exportJSON(store)
        func expectError(_ kind: StorageError.Kind, _ body: () throws -> Any) {
            #expect { _ = try body() } throws: { ($0 as? StorageError)?.kind == kind }
        }
        expectError(.refused) { try store.sendMessage(from: "bob", to: "alice", text: "bob follows nobody") }
        expectError(.refused) { try store.sendMessage(from: "alice", to: "alice", text: "me") }
        expectError(.refused) { try store.sendMessage(from: "alice", to: "bob", text: " \n\t") }
        expectError(.notFound) { try store.sendMessage(from: "alice", to: "nobody", text: "hi") }
        expectError(.notFound) { try store.sendMessage(from: "nobody", to: "alice", text: "hi") }
        expectError(.notFound) { try store.chats(between: "alice", "nobody") }
        expectError(.notFound) { try store.chats(of: "nobody", limit: 5) }
        expectError(.notFound) { try store.messages(in: "-Nope", limit: 5) }
        expectError(.notFound) { try store.watchMessages(in: "-Nope") }
        expectError(.refused) { try store.mergeChats(keep: "-Ch1", drop: "-Ch1") }
        expectError(.notFound) { try store.mergeChats(keep: "-Ch1", drop: "-Nope") }
        expectSameText(try exportJSON(store), before)
    }

    @Test func openPrefersTheStableHashAndSendUsesThatChat() throws {
        let store = try consistentStore(treeWithDuplicate)
        #expect(try store.chats(between: "bob", "alice").map(\.key) == ["-Ch1", "-Ch0"])
        #expect(try store.chats(between: "alice", "carol").isEmpty)
        #expect(try store.sendMessage(from: "alice", to: "bob", text: "which chat?").chat.key == "-Ch1")
        let violations = try store.check([.chatDuplicates, .chatHashLegacy]).map(\.violations)
        #expect(violations == [1, 1])
    }

    @Test func listsChatsAndPagesMessages() throws {
        let store = try consistentStore(treeWithDuplicate)
        let chats = try store.chats(of: "alice", limit: 10)
        #expect(chats.map(\.key) == ["-Ch1", "-Ch0"])
        #expect(
            chats.first
                == Chat(
                    uid: "alice", key: "-Ch1", title: "alice, bob",
                    memberHash: ChatMemberHash.stableText("alice", "bob"),
                    members: ["alice", "bob"], lastMessage: "bob: hi", lastMessageSent: 1_500_000_020))
        #expect(try store.chats(of: "alice", limit: 1).map(\.key) == ["-Ch1"])
        #expect(try store.chats(of: "carol", limit: 10).isEmpty)
        #expect(try store.messages(in: "-Ch1", limit: 10).map(\.key) == ["-M1", "-M2"])
        #expect(try store.messages(in: "-Ch1", limit: 1).map(\.key) == ["-M2"])
        #expect(try store.messages(in: "-Ch1", limit: 10, before: "-M2").map(\.key) == ["-M1"])
        #expect(try store.messages(in: "-Ch1", limit: 10, before: "-M1").isEmpty)
        let newest = try store.messages(in: "-Ch1", limit: 1)
        #expect(
            newest == [
                Message(
                    chatKey: "-Ch1", key: "-M2", content: "hi", timestamp: 1_500_000_020, senderUID: "bob",
                    senderUsername: "bob")
            ])
    }

    @Test func mergeMovesTheMessagesIntoTheChatThatStays() throws {
        let store = try consistentStore(treeWithDuplicate)
        let before = try exportJSON(store)
        let dryRun = try store.mergeChats(keep: "-Ch1", drop: "-Ch0", isDryRun: true)
        #expect(dryRun.isDryRun && dryRun.rowsChanged == 3)
        expectSameText(try exportJSON(store), before)

        let report = try store.mergeChats(keep: "-Ch1", drop: "-Ch0")
        #expect(report.changes.map(\.rows) == [1, 0, 2, 0, 0])
        // -M0 is older than -M2, so the copies keep describing -M2.
        let tree = consistentTree.setting(
            "messages/-Ch1/-M0",
            """
            {"content": "old", "timestamp": 1400000000, "sender": {"uid": "alice", "username": "alice"}}
            """)
        try expectTree(store, tree)
        try expectCheckClean(store)
    }

    @Test func mergeRefusesChatsOfOtherMembersOrSharedMessageKeys() throws {
        let tree =
            treeWithDuplicate
            .setting("chats/carol/-Ch2", #"{"title": "carol, alice", "members": {"alice": true, "carol": true}}"#)
            .setting("chats/alice/-Ch2", #"{"title": "carol, alice", "members": {"alice": true, "carol": true}}"#)
            .setting("messages/-Ch0/-M1", #"{"content": "same key", "timestamp": 1400000001}"#)
        let store = try consistentStore(tree)
        #expect { try store.mergeChats(keep: "-Ch1", drop: "-Ch2") } throws: {
            ($0 as? StorageError)?.message == "chats -Ch1 and -Ch2 have different members"
        }
        #expect { try store.mergeChats(keep: "-Ch1", drop: "-Ch0") } throws: {
            ($0 as? StorageError)?.message == "message -M1 is in both chats; merge them by hand"
        }
    }

    /// Collects what `watch` reports until `count` changes came or 10 seconds passed.
    private func collect<Change>(_ count: Int, from watch: Watch<Change>) throws -> [Change] {
        var changes: [Change] = []
        let deadline = Date().addingTimeInterval(10)
        while changes.count < count && Date() < deadline {
            changes += try watch.next(waitingAtMost: 0.1)
        }
        return changes
    }

    @Test func watchersSeeEachCommittedChangeInCommitOrder() throws {
        let database = try TestPostgres.makeDatabase()
        let sender = Store(connection: try database.connect())
        try importJSON(treeWithDuplicate.json, into: sender)
        let messages = try Store(connection: try database.connect()).watchMessages(in: "-Ch1")
        let bobsChats = try Store(connection: try database.connect()).watchChats(of: "bob")

        // A message whose transaction rolls back is never announced.
        #expect(throws: StorageError.self) {
            try sender.connection.withTransaction {
                _ = try sender.sendMessage(from: "alice", to: "bob", text: "never sent")
                throw StorageError(.refused, "changed my mind")
            }
        }
        var sent: [Message] = []
        for text in ["one", "two", "three"] {
            sent.append(try sender.sendMessage(from: "alice", to: "bob", text: text).message)
        }
        #expect(try collect(3, from: messages) == sent)
        #expect(try messages.next(waitingAtMost: 0.2).isEmpty)
        // Each change as it committed, not the copy as it is by the time the watcher reads it.
        let changes = try collect(3, from: bobsChats)
        #expect(changes.map { $0.chat?.lastMessage } == sent.map { "alice: \($0.content!)" })
        #expect(changes.allSatisfy { $0.uid == "bob" && $0.key == "-Ch1" })

        // Over NOTIFY's 8000-byte payload limit the event carries only the path, and the watch reads the row.
        let long = try sender.sendMessage(from: "alice", to: "bob", text: String(repeating: "ab", count: 5000))
        #expect(try collect(1, from: messages) == [long.message])
        #expect(try collect(1, from: bobsChats).map { $0.chat?.lastMessage?.count } == [10_007])

        _ = try sender.mergeChats(keep: "-Ch1", drop: "-Ch0")
        let merged = try collect(2, from: bobsChats)
        #expect(merged.map(\.key) == ["-Ch1", "-Ch0"])
        #expect(merged.map { $0.chat == nil } == [false, true])
        try messages.stop()
        try bobsChats.stop()
    }
}

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
