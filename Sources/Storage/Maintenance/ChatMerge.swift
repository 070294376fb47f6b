import FirebaseTree
import Foundation
internal import PostgresClient

/// Which chat of a group of duplicates stays, by the creation time its push ID holds.
public enum ChatToKeep: String, CaseIterable, Sendable {
    /// The most recently created.
    case newest
    /// The first created.
    case oldest
}

extension Repairs {
    /// `Store.mergeChats`: see there.
    func mergeChats(keep: String, drop: String, isDryRun: Bool = false) throws -> RepairReport {
        try repair(.chatMerge, options: RepairOptions(isDryRun: isDryRun, mergedChats: (keep, drop)))
    }

    /// `Store.mergeDuplicateChats`: see there.
    func mergeDuplicateChats(keeping: ChatToKeep, isDryRun: Bool = false, waitSeconds: Double = 0) throws
        -> RepairReport
    {
        let clock = ContinuousClock()
        let started = clock.now
        var report = RepairReport(repair: .chatMerge, isDryRun: isDryRun)
        try connection.withTransaction(rollback: isDryRun) {
            try maintenance.take(wait: MaintenanceWait(seconds: waitSeconds))
            try treeRows.lockTree()
            let groups = try connection.query(
                """
                SELECT array_agg(chat_key ORDER BY chat_key), members FROM chat_members
                WHERE cardinality(members) = 2 GROUP BY members HAVING count(*) > 1 ORDER BY members
                """
            ).map { (keys: try $0.decode([String].self, at: 0), members: try $0.decode([String].self, at: 1)) }
            for group in groups {
                guard let keep = keeping == .newest ? group.keys.last : group.keys.first else { continue }
                for drop in group.keys where !FirebaseKey.same(drop, keep) {
                    var merged = MergedChat(kept: keep, dropped: drop, members: group.members, messagesMoved: 0)
                    for step in try chatMergeSteps((keep, drop)) {
                        let rows = try connection.execute(step.query)
                        guard let (table, action) = step.reported else { continue }
                        report.add(.init(table: table, action: action, rows: rows))
                        if table == "messages" { merged.messagesMoved += rows }
                    }
                    report.mergedChats.append(merged)
                }
            }
        }
        report.seconds = (clock.now - started).seconds
        return report
    }

    /// Checks the two chats, then returns the statements of the merge; runs inside the repair's transaction.
    func chatMergeSteps(_ chats: (keep: String, drop: String)?) throws -> [Step] {
        guard let (keep, drop) = chats else {
            throw StorageError(
                .refused, "chat merge needs the chat to keep and the chat to drop (RepairOptions.mergedChats)")
        }
        guard !FirebaseKey.same(keep, drop) else { throw StorageError(.refused, "a chat cannot be merged into itself") }
        // Keyed and compared by bytes: canonically equivalent chat keys and uids are distinct, as in Firebase.
        // The holders first, from chat_holders (placed by chat key), then their copies by holder: on Citus, where
        // copies are placed by their holder, both go to the shards that have the rows instead of to every shard.
        var holders: [TreeKey: [String]] = [:]
        for row in try connection.query("SELECT chat_key, uid FROM chat_holders WHERE chat_key IN (\(keep), \(drop))") {
            holders[TreeKey(try row.decode(String.self, at: 0)), default: []].append(try row.decode(String.self, at: 1))
        }
        // A chat's members are those of all its copies, each once (by bytes), in byte order.
        var memberSets: [TreeKey: Set<TreeKey>] = [:]
        for row in try connection.query(
            """
            SELECT chat_key, members FROM chats
            WHERE uid = ANY (\(holders.values.flatMap { $0 })) AND chat_key IN (\(keep), \(drop))
            """)
        {
            let uids = (try row.decode([String?]?.self, at: 1) ?? []).compactMap { $0 }.map(TreeKey.init(_:))
            memberSets[TreeKey(try row.decode(String.self, at: 0)), default: []].formUnion(uids)
        }
        let members = memberSets.mapValues { set in
            set.map(\.string).sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        }
        func found<Value>(_ values: [TreeKey: Value], _ key: String) throws -> Value {
            guard let value = values[TreeKey(key)] else {
                throw StorageError(.notFound, "no chat \(key) (no user holds a copy of it)")
            }
            return value
        }
        let (pair, dropped) = (try found(members, keep), try found(members, drop))
        let (keepHolders, dropHolders) = (try found(holders, keep), try found(holders, drop))
        guard pair.map(TreeKey.init(_:)) == dropped.map(TreeKey.init(_:)) else {
            throw StorageError(
                .refused, "chats \(keep) and \(drop) have different members",
                detail: "\(keep): \(pair.joined(separator: ", ")); \(drop): \(dropped.joined(separator: ", "))")
        }
        if let both = try connection.query(
            """
            SELECT message_key FROM messages WHERE chat_key IN (\(keep), \(drop))
            GROUP BY message_key HAVING count(*) > 1 ORDER BY message_key LIMIT 1
            """
        ).first {
            throw StorageError(
                .refused, "message \(try both.decode(String.self, at: 0)) is in both chats; merge them by hand")
        }
        // The kept chat's newest message once the dropped chat's have moved in: the newest of both (as
        // chat_newest_messages orders them), named now so that its copies' last message is set from that row alone
        // rather than from the view over every chat's messages.
        let newest = try connection.query(
            """
            SELECT message_key FROM messages WHERE chat_key IN (\(keep), \(drop))
            ORDER BY "timestamp" DESC NULLS LAST, message_key DESC LIMIT 1
            """
        ).first.map { try $0.decode(String.self, at: 0) }
        if pair.count == 2 {
            // A message sent to the pair meanwhile must land in the chat that stays.
            try connection.execute(
                """
                SELECT pg_advisory_xact_lock(\(AppOperations.chatLockClass), \(AppOperations.chatLockKey(pair[0], pair[1])))
                """)
        }
        let steps: [Step?] = [
            // Moved by a delete and an insert rather than an UPDATE of the key: on Citus, chat_key places the row,
            // and a row cannot change its distribution value in place.
            Step(
                table: "messages", action: .updated,
                query: """
                    WITH moved AS (DELETE FROM messages WHERE chat_key = \(drop) RETURNING *)
                    INSERT INTO messages (chat_key, message_key, content, "timestamp", sender_uid, sender_username, extra)
                    SELECT \(keep), message_key, content, "timestamp", sender_uid, sender_username, extra FROM moved
                    """),
            Step(
                table: "unmapped_values", action: .updated,
                query: """
                    UPDATE unmapped_values SET path[1] = \(keep),
                        sort_key = rtdb_path_order(root, ARRAY[\(keep)]::text[] || path[2:])
                    WHERE root = 'messages' AND path[1] = \(drop)
                    """),
            Step(
                table: "chats", action: .deleted,
                query: "DELETE FROM chats WHERE chat_key = \(drop) AND uid = ANY (\(dropHolders))"),
            Step(unreported: DerivedCopies.chatForgotten(drop)),
            Step(
                table: "unmapped_values", action: .deleted,
                query: """
                    DELETE FROM unmapped_values WHERE root = 'chats' AND path[2] = \(drop)
                    """),
            newest.map { newest in
                Step(
                    table: "chats", action: .updated,
                    query: """
                        UPDATE chats c
                        SET last_message = n.sender_username || ': ' || n.content, last_message_sent = n."timestamp",
                            extra = nullif(c.extra - '{lastMessage,lastMessageSent}'::text[], '{}')
                        FROM (
                            SELECT sender_username, content, "timestamp" FROM messages
                            WHERE chat_key = \(keep) AND message_key = \(newest)
                        ) n
                        WHERE c.chat_key = \(keep) AND c.uid = ANY (\(keepHolders))
                            AND (c.last_message IS DISTINCT FROM n.sender_username || ': ' || n.content
                                 OR c.last_message_sent IS DISTINCT FROM n."timestamp"
                                 OR c.extra ?| '{lastMessage,lastMessageSent}'::text[])
                        """)
            },
            Step(unreported: "SELECT notify_chat(\(keep)), notify_chat(\(drop), \(dropHolders))"),
        ]
        return steps.compactMap { $0 }
    }
}
