import Foundation
import PostgresTestSupport
import Testing
import TreeTestSupport

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
            ($0 as? StorageError)?.message == "message -M1 is in both chats -Ch0 and -Ch1; merge them by hand"
        }
    }

    /// `chat merge --all` merges every group in a dozen statements over all of them, and `chat merge KEEP DROP`
    /// one pair in the same statements; both must leave what the model of the merge on the tree leaves. Groups of
    /// up to four chats, messages with tied, missing and extra fields, values kept unmapped under /messages and
    /// /chats, copies held by one member only. Odd seeds keep the newest chat of each group, even ones the oldest.
    @Test(arguments: 1...6)
    func mergingEveryGroupLeavesWhatTheModelOfTheTreeLeaves(seed: UInt64) throws {
        let keeping: ChatToKeep = seed % 2 == 1 ? .newest : .oldest
        var random = SeededGenerator(state: seed)
        let tree = duplicateChatsTree(using: &random)
        let (expected, moved) = mergedByModel(tree, keeping: keeping)
        let atOnce = try consistentStore(tree)
        let report = try atOnce.mergeDuplicateChats(keeping: keeping)
        #expect(report.mergedChats.count >= 4, "the tree has groups to merge")
        #expect(Dictionary(uniqueKeysWithValues: report.mergedChats.map { ($0.dropped, $0.messagesMoved) }) == moved)
        try expectTree(atOnce, expected)
        #expect(try atOnce.check([.chatDuplicates]).allSatisfy(\.isClean))

        let pairByPair = try consistentStore(tree)
        for merged in report.mergedChats {
            let pair = try pairByPair.mergeChats(keep: merged.kept, drop: merged.dropped)
            #expect(pair.changes.first { $0.table == "messages" }?.rows == merged.messagesMoved)
        }
        try expectTree(pairByPair, expected)
    }

    /// What Firebase's tree holds once every group of chats with the same two members is one chat: the messages
    /// (and whatever else) under /messages/DROPPED move under /messages/KEPT, the dropped chats' copies go, and
    /// the kept chat's copies describe its newest message (greatest timestamp, a missing one least, then greatest
    /// key). Also how many messages each dropped chat had.
    private func mergedByModel(_ tree: TreeValue, keeping: ChatToKeep) -> (TreeValue, [String: Int]) {
        var tree = tree
        var members: [String: Set<String>] = [:]
        var holders: [String: [String]] = [:]
        for (uid, copies) in tree["chats"]?.children ?? [:] {
            for (chat, copy) in copies.children ?? [:] where copy.children != nil {
                holders[chat.string, default: []].append(uid.string)
                let uids = (copy["members"]?.children ?? [:]).filter { $0.value == .bool(true) }.map(\.key.string)
                members[chat.string, default: []].formUnion(uids)
            }
        }
        let pairs = members.filter { $0.value.count == 2 }
        let groups = Dictionary(grouping: pairs.keys) { pairs[$0]!.sorted() }.values.filter { $0.count > 1 }
        var moved: [String: Int] = [:]
        for group in groups {
            let byKey = group.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
            let keep = keeping == .newest ? byKey[byKey.count - 1] : byKey[0]
            for drop in byKey where drop != keep {
                let children = tree.descendant(at: ["messages", drop])?.children ?? [:]
                moved[drop] = children.values.filter { $0.children != nil }.count
                for (key, value) in children { tree.set(value, at: ["messages", keep, key.string][...]) }
                tree = tree.removing(["messages", drop]) ?? .object([:])
                for holder in holders[drop] ?? [] { tree = tree.removing(["chats", holder, drop]) ?? .object([:]) }
            }
            let messages = (tree.descendant(at: ["messages", keep])?.children ?? [:]).filter {
                $0.value.children != nil
            }
            let newest = messages.max { a, b in
                switch (a.value["timestamp"], b.value["timestamp"]) {
                case (.number(let x)?, .number(let y)?) where x != y: x < y
                case (nil, .number?): true
                case (.number?, nil): false
                default: a.key.string.utf8.lexicographicallyPrecedes(b.key.string.utf8)
                }
            }
            guard let newest = newest?.value else { continue }
            for holder in holders[keep] ?? [] {
                guard var copy = tree.descendant(at: ["chats", holder, keep])?.children else { continue }
                if case .string(let name)? = newest["sender"]?["username"], case .string(let text)? = newest["content"]
                {
                    copy["lastMessage"] = .string(name + ": " + text)
                } else {
                    copy["lastMessage"] = nil
                }
                copy["lastMessageSent"] = newest["timestamp"]
                tree.set(.object(copy), at: ["chats", holder, keep][...])
            }
        }
        return (tree, moved)
    }

    /// A key under /messages/CHAT in two chats of a group (a message, or a value kept unmapped) refuses every
    /// merge, though neither is the chat that stays; so does a chat whose /messages node is a leaf.
    @Test(arguments: [
        (
            #"{"content": "one", "timestamp": 1}"#, #"{"content": "two", "timestamp": 2}"#,
            "message -Mshared is in both chats -Cab0 and -Cab1; merge them by hand"
        ),
        (
            #""a value""#, #"{"content": "two", "timestamp": 2}"#,
            "message -Mshared is in both chats -Cab0 and -Cab1; merge them by hand"
        ),
        (
            #"{"content": "one", "reactions": {"b": 1}}"#, #"["a", "b"]"#,
            "message -Mshared is in both chats -Cab0 and -Cab1; merge them by hand"
        ),
    ])
    func aKeyInTwoDroppedChatsRefusesTheWholeMerge(first: String, second: String, message: String) throws {
        var random = SeededGenerator(state: 9)
        let tree = duplicateChatsTree(using: &random)
            .setting("messages/-Cab0/-Mshared", first)
            .setting("messages/-Cab1/-Mshared", second)
        let store = try consistentStore(tree)
        let before = try exportJSON(store)
        #expect { try store.mergeDuplicateChats(keeping: .newest) } throws: {
            ($0 as? StorageError)?.message == message
        }
        expectSameText(try exportJSON(store), before)
    }

    @Test func aChatWhoseMessagesAreALeafIsNotMergedIntoOneWithMessages() throws {
        var random = SeededGenerator(state: 9)
        let tree = duplicateChatsTree(using: &random).setting("messages/-Cab1", #""no messages here""#)
            .setting("messages/-Cab2/-Mlast", #"{"content": "hi", "timestamp": 9}"#)
        let store = try consistentStore(tree)
        let before = try exportJSON(store)
        #expect { try store.mergeDuplicateChats(keeping: .newest) } throws: {
            ($0 as? StorageError)?.message
                == "/messages/-Cab1 is a value, not messages, and chat -Cab2 has messages too; merge them by hand"
        }
        expectSameText(try exportJSON(store), before)
    }

    /// Users a to f; for some pairs of them one to four chats (`-C{pair}{n}`, the pair ab always three), each
    /// copied under its members (now and then under one only), with messages and now and then values the store
    /// keeps unmapped.
    private func duplicateChatsTree(using random: inout SeededGenerator) -> TreeValue {
        let users = ["a", "b", "c", "d", "e", "f"]
        var tree = TreeValue.object([:])
        for user in users { tree = tree.setting("users/\(user)", #"{"username": "\#(user)"}"#) }
        var messageNumber = 0
        for (index, first) in users.enumerated() {
            for second in users[(index + 1)...] where first == "a" && second == "b" || Bool.random(using: &random) {
                let pair = first + second
                let count = pair == "ab" ? 3 : Int.random(in: 1...4, using: &random)
                for number in 0..<count {
                    let chat = "-C\(pair)\(number)"
                    let last = Bool.random(using: &random) ? #", "lastMessage": "x: stale", "lastMessageSent": 5"# : ""
                    let extra = Int.random(in: 0..<4, using: &random) == 0 ? #", "muted": true"# : ""
                    let copy = #"{"title": "\#(pair)", "members": {"\#(first)": true, "\#(second)": true}\#(last)"#
                    for holder in [first, second] {
                        guard holder == first || Int.random(in: 0..<5, using: &random) > 0 else { continue }
                        tree = tree.setting("chats/\(holder)/\(chat)", copy + (holder == first ? extra : "") + "}")
                    }
                    if Int.random(in: 0..<4, using: &random) == 0 {
                        tree = tree.setting("messages/\(chat)/note\(number)", #""kept unmapped""#)
                    }
                    if Int.random(in: 0..<5, using: &random) == 0 {
                        tree = tree.setting("chats/\(first)/\(chat)/pinned/by", #""\#(first)""#)
                    }
                    for _ in 0..<Int.random(in: 0...3, using: &random) {
                        messageNumber += 1
                        let sender = Bool.random(using: &random) ? first : second
                        let time =
                            Int.random(in: 0..<3, using: &random) == 0
                            ? "" : #", "timestamp": \#(Int.random(in: 1...4, using: &random))"#
                        let edited = Int.random(in: 0..<4, using: &random) == 0 ? #", "edited": true"# : ""
                        let from = #""sender": {"uid": "\#(sender)", "username": "\#(sender)"}"#
                        tree = tree.setting(
                            "messages/\(chat)/-M\(messageNumber)",
                            #"{"content": "m\#(messageNumber)", \#(from)\#(time)\#(edited)}"#)
                    }
                }
            }
        }
        return tree
    }
}
