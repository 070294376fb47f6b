import Foundation
import PostgresTestSupport
import Testing

@testable import Storage

@Suite("Chats")
struct ChatTests {
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
        let store = try consistentStore(treeWithDuplicateChat)
        #expect(try store.chats(between: "bob", "alice").map(\.key) == ["-Ch1", "-Ch0"])
        #expect(try store.chats(between: "alice", "carol").isEmpty)
        #expect(try store.sendMessage(from: "alice", to: "bob", text: "which chat?").chat.key == "-Ch1")
        let violations = try store.check([.chatDuplicates, .chatHashLegacy]).map(\.violations)
        #expect(violations == [1, 1])
    }

    @Test func listsChatsAndPagesMessages() throws {
        let store = try consistentStore(treeWithDuplicateChat)
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
}
