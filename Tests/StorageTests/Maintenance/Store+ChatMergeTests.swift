import Foundation
import PostgresTestSupport
import Testing

@testable import Storage

@Suite("chat merge")
struct ChatMergeTests {
    @Test func mergeMovesTheMessagesIntoTheChatThatStays() throws {
        let store = try consistentStore(treeWithDuplicateChat)
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
            treeWithDuplicateChat
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
}
