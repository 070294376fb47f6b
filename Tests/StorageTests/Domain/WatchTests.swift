import Foundation
import PostgresTestSupport
import Testing

@testable import Storage

@Suite("Realtime events")
struct WatchTests {
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
        try importJSON(treeWithDuplicateChat.json, into: sender)
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
