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
            ).map { row in
                let keys = try row.decode([String].self, at: 0)
                return DuplicateChats(
                    keep: keeping == .newest ? keys[keys.count - 1] : keys[0],
                    all: keys, members: try row.decode([String].self, at: 1))
            }
            guard !groups.isEmpty else { return }
            let merge = try duplicateChatMerge(groups)
            for step in merge.steps {
                let rows = try connection.execute(step.query)
                if let (table, action) = step.reported { report.add(.init(table: table, action: action, rows: rows)) }
            }
            report.mergedChats = merge.merged
        }
        report.seconds = (clock.now - started).seconds
        return report
    }

    /// Chats of the same two members, by key, and the one of them that stays.
    struct DuplicateChats {
        var keep: String
        var all: [String]
        var members: [String]

        /// The chats merged into `keep`, in key order.
        var dropped: [String] { all.filter { !FirebaseKey.same($0, keep) } }
    }

    /// The statements that merge every group at once, each over all of them: what merging the groups' chats
    /// pair by pair would leave, in a dozen statements rather than a dozen per chat (on Citus each is a round of
    /// statements to the shards). Refuses them all, naming the first case found, when two chats of a group have
    /// the same key under /messages/CHAT (a message, or a value kept unmapped), or when one chat's /messages
    /// node is a leaf and another chat of its group has anything there: the chats' /messages nodes become one.
    func duplicateChatMerge(_ groups: [DuplicateChats]) throws -> (steps: [Step], merged: [MergedChat]) {
        let chats = groups.flatMap(\.all)
        let keepOfChat = groups.flatMap { group in group.all.map { _ in group.keep } }
        let drops = groups.flatMap(\.dropped)
        let keepOfDrop = groups.flatMap { group in group.dropped.map { _ in group.keep } }
        if let shared = try connection.query(
            """
            WITH children AS (
                SELECT g.keep, c.chat_key, c.child FROM (
                    SELECT chat_key, message_key AS child FROM messages WHERE chat_key = ANY (\(chats))
                    UNION ALL
                    SELECT path[1], coalesce(path[2], '') FROM unmapped_values
                    WHERE root = 'messages' AND path[1] = ANY (\(chats))
                ) c JOIN unnest(\(chats)::text[], \(keepOfChat)::text[]) AS g(chat_key, keep) ON g.chat_key = c.chat_key
            )
            SELECT keep, child, min(chat_key), max(chat_key) FROM children
            GROUP BY keep, child HAVING count(DISTINCT chat_key) > 1
            UNION ALL
            SELECT a.keep, a.child, a.chat_key, min(b.chat_key) FROM children a
            JOIN children b ON b.keep = a.keep AND b.chat_key <> a.chat_key
            WHERE a.child = '' GROUP BY a.keep, a.child, a.chat_key
            ORDER BY 1, 2 LIMIT 1
            """
        ).first {
            let (child, chat, other) = (
                try shared.decode(String.self, at: 1), try shared.decode(String.self, at: 2),
                try shared.decode(String.self, at: 3)
            )
            throw StorageError(
                .refused,
                child.isEmpty
                    ? "/messages/\(chat) is a value, not messages, and chat \(other) has messages too; "
                        + "merge them by hand"
                    : "message \(child) is in both chats \(chat) and \(other); merge them by hand",
                detail: "Each key under /messages/CHAT may be in one chat of a merge only: the chats merge into "
                    + "one /messages node.")
        }
        var moved: [TreeKey: Int] = [:]
        for row in try connection.query(
            "SELECT chat_key, count(*) FROM messages WHERE chat_key = ANY (\(drops)) GROUP BY chat_key")
        {
            moved[TreeKey(try row.decode(String.self, at: 0))] = try row.decode(Int.self, at: 1)
        }
        var holders: (kept: [String], dropped: [String], ofDropped: [String]) = ([], [], [])
        let isDropped = Set(drops.map(TreeKey.init(_:)))
        for row in try connection.query("SELECT chat_key, uid FROM chat_holders WHERE chat_key = ANY (\(chats))") {
            let (chat, uid) = (try row.decode(String.self, at: 0), try row.decode(String.self, at: 1))
            if isDropped.contains(TreeKey(chat)) {
                holders.dropped.append(uid)
                holders.ofDropped.append(chat)
            } else {
                holders.kept.append(uid)
            }
        }
        // Each kept chat's newest message once the others' have moved in: the newest of its group (as
        // chat_newest_messages orders them), named now so that its copies' last message is set from those rows
        // alone rather than from the view over every chat's messages.
        var newest: (chats: [String], messages: [String]) = ([], [])
        for row in try connection.query(
            """
            SELECT DISTINCT ON (g.keep) g.keep, m.message_key FROM messages m
            JOIN unnest(\(chats)::text[], \(keepOfChat)::text[]) AS g(chat_key, keep) ON g.chat_key = m.chat_key
            WHERE m.chat_key = ANY (\(chats))
            ORDER BY g.keep, m."timestamp" DESC NULLS LAST, m.message_key DESC
            """)
        {
            newest.chats.append(try row.decode(String.self, at: 0))
            newest.messages.append(try row.decode(String.self, at: 1))
        }
        // A message sent to a pair meanwhile must land in the chat that stays; taken in one order by every merge.
        let pairLocks = Set(
            groups.compactMap { group in
                group.members.count == 2 ? AppOperations.chatLockKey(group.members[0], group.members[1]) : nil
            }
        ).sorted()
        let steps: [Step?] = [
            Step(
                unreported: """
                    SELECT pg_advisory_xact_lock(\(AppOperations.chatLockClass), k)
                    FROM unnest(\(pairLocks)::int[]) WITH ORDINALITY AS l(k, n) ORDER BY n
                    """),
            // Moved by a delete and an insert rather than an UPDATE of the key: on Citus, chat_key places the row,
            // and a row cannot change its distribution value in place.
            Step(
                table: "messages", action: .updated,
                query: """
                    WITH moved AS (DELETE FROM messages WHERE chat_key = ANY (\(drops)) RETURNING *)
                    INSERT INTO messages (chat_key, message_key, content, "timestamp", sender_uid, sender_username, extra)
                    SELECT g.keep, m.message_key, m.content, m."timestamp", m.sender_uid, m.sender_username, m.extra
                    FROM moved m JOIN unnest(\(drops)::text[], \(keepOfDrop)::text[]) AS g(chat_key, keep)
                        ON g.chat_key = m.chat_key
                    """),
            Step(
                table: "unmapped_values", action: .updated,
                query: """
                    UPDATE unmapped_values u SET path[1] = g.keep,
                        sort_key = rtdb_path_order(u.root, ARRAY[g.keep]::text[] || u.path[2:])
                    FROM unnest(\(drops)::text[], \(keepOfDrop)::text[]) AS g(chat_key, keep)
                    WHERE u.root = 'messages' AND u.path[1] = ANY (\(drops)) AND u.path[1] = g.chat_key
                    """),
            Step(
                table: "chats", action: .deleted,
                query: "DELETE FROM chats WHERE chat_key = ANY (\(drops)) AND uid = ANY (\(holders.dropped))"),
            Step(unreported: DerivedCopies.chatsForgotten(drops)),
            Step(
                table: "unmapped_values", action: .deleted,
                query: "DELETE FROM unmapped_values WHERE root = 'chats' AND path[2] = ANY (\(drops))"),
            newest.chats.isEmpty
                ? nil
                : Step(
                    table: "chats", action: .updated,
                    query: """
                        UPDATE chats c
                        SET last_message = n.sender_username || ': ' || n.content, last_message_sent = n."timestamp",
                            extra = nullif(c.extra - '{lastMessage,lastMessageSent}'::text[], '{}')
                        FROM (
                            SELECT m.chat_key, m.sender_username, m.content, m."timestamp" FROM messages m
                            JOIN unnest(\(newest.chats)::text[], \(newest.messages)::text[]) AS k(chat_key, message_key)
                                ON k.chat_key = m.chat_key AND k.message_key = m.message_key
                            WHERE m.chat_key = ANY (\(newest.chats))
                        ) n
                        WHERE c.chat_key = n.chat_key AND c.uid = ANY (\(holders.kept))
                            AND (c.last_message IS DISTINCT FROM n.sender_username || ': ' || n.content
                                 OR c.last_message_sent IS DISTINCT FROM n."timestamp"
                                 OR c.extra ?| '{lastMessage,lastMessageSent}'::text[])
                        """),
            Step(
                unreported: """
                    SELECT notify_chats(\(groups.map(\.keep))::text[], \(holders.kept)::text[],
                        \(holders.ofDropped)::text[], \(holders.dropped)::text[])
                    """),
        ]
        let merged = groups.flatMap { group in
            group.dropped.map { drop in
                MergedChat(
                    kept: group.keep, dropped: drop, members: group.members,
                    messagesMoved: moved[TreeKey(drop)] ?? 0)
            }
        }
        return (steps.compactMap { $0 }, merged)
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
        guard pair.map(TreeKey.init(_:)) == dropped.map(TreeKey.init(_:)) else {
            throw StorageError(
                .refused, "chats \(keep) and \(drop) have different members",
                detail: "\(keep): \(pair.joined(separator: ", ")); \(drop): \(dropped.joined(separator: ", "))")
        }
        let group = DuplicateChats(
            keep: keep, all: [keep, drop].sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }, members: pair)
        return try duplicateChatMerge([group]).steps
    }
}
