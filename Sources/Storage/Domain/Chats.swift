import FirebaseTree
import Foundation
internal import PostgresClient

extension AppOperations {

    /// `Store.chats`: see there.
    func chats(between a: String, _ b: String) throws -> [Chat] {
        try reads.readingSnapshot {
            _ = try usernames(a, b, lock: .none)
            return try pairChats(a, b)
        }
    }

    /// `Store.sendMessage`: see there.
    func sendMessage(
        from sender: String, to recipient: String, text: String, pushIDs: PushIDGenerator = .shared,
        clock: () -> Date = Date.init
    ) throws -> SentMessage {
        guard !FirebaseKey.same(sender, recipient) else {
            throw StorageError(.refused, "a chat has two members: \(sender) cannot message themselves")
        }
        guard !text.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else {
            throw StorageError(.refused, "the message is empty")
        }
        try Self.requireString(text, "the message")
        return try connection.withTransaction {
            let (senderName, recipientName) = try usernames(sender, recipient)
            // FOR KEY SHARE holds the edge until commit, so an unfollow waits instead of slipping in between.
            guard
                try !connection.query(
                    """
                    SELECT 1 FROM following WHERE uid = \(sender) AND followee_uid = \(recipient) FOR KEY SHARE
                    """
                ).isEmpty
            else {
                throw StorageError(
                    .refused, "\(sender) does not follow \(recipient); users can only message users they follow")
            }
            // One sender at a time per pair: two first messages must not create two chats, and each message must
            // see the one before it to know which is the newest.
            try connection.execute(
                """
                SELECT pg_advisory_xact_lock(\(Self.chatLockClass), \(Self.chatLockKey(sender, recipient)))
                """)
            let existing = try pairChats(sender, recipient).first
            let members = [sender, recipient].sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
            let chatKey = existing?.key ?? pushIDs.next()
            let message = Message(
                chatKey: chatKey, key: pushIDs.next(), content: text, timestamp: clock().timeIntervalSince1970,
                senderUID: sender, senderUsername: senderName)
            try connection.execute(
                """
                INSERT INTO messages (chat_key, message_key, content, "timestamp", sender_uid, sender_username)
                VALUES (\(chatKey), \(message.key), \(text), \(message.timestamp), \(sender), \(senderName))
                """)
            let copies = try writeCopies(
                chatKey: chatKey, members: existing?.members ?? members,
                title: existing == nil ? "\(senderName ?? sender), \(recipientName ?? recipient)" : existing?.title,
                memberHash: existing == nil ? ChatMemberHash.stableText(sender, recipient) : existing?.memberHash)
            try connection.execute("SELECT notify_message(\(chatKey), \(message.key)), notify_chat(\(chatKey))")
            guard let copy = copies.first(where: { FirebaseKey.same($0.uid, sender) }) else {
                throw StorageError(.server, "the sender's copy of chat \(chatKey) was not written")
            }
            return SentMessage(chat: copy, message: message, createdChat: existing == nil)
        }
    }

    /// `Store.chats`: see there.
    func chats(of uid: String, limit: Int) throws -> [Chat] {
        try reads.readingSnapshot {
            try requireUser(uid, lock: .none)
            return try connection.query(
                """
                SELECT \(Self.chatColumns) FROM chats
                WHERE uid = \(uid)
                ORDER BY last_message_sent DESC NULLS LAST, chat_key DESC
                LIMIT \(limit)
                """
            ).map(Self.chat(from:))
        }
    }

    /// `Store.messages`: see there.
    func messages(in chatKey: String, limit: Int, before: String? = nil) throws -> [Message] {
        try reads.readingSnapshot {
            let messages = try connection.query(
                """
                SELECT \(Self.messageColumns) FROM (
                    SELECT * FROM messages
                    WHERE chat_key = \(chatKey) AND (\(before) IS NULL OR message_key < \(before))
                    ORDER BY message_key DESC LIMIT \(limit)) m
                ORDER BY message_key
                """
            ).map(Self.message(from:))
            if messages.isEmpty { try requireChat(chatKey) }
            return messages
        }
    }

    /// Fails unless some user holds a copy of the chat or the chat has messages.
    func requireChat(_ chatKey: String) throws {
        let rows = try connection.query(
            """
            SELECT \(Query.anyRow(in: "chats", where: "chat_key = \(chatKey)"))
                OR \(Query.anyRow(in: "messages", where: "chat_key = \(chatKey)"))
            """)
        guard try rows[0].decode(Bool.self, at: 0) else { throw StorageError(.notFound, "no chat \(chatKey)") }
    }

    /// The usernames of two users, which must both exist, locking their rows as `lock` says, in lock order.
    private func usernames(_ a: String, _ b: String, lock: UserLock = .keyShare) throws -> (String?, String?) {
        var names: [TreeKey: String?] = [:]
        for uid in Self.inLockOrder([a, b], uid: { $0 }) {
            for row in try connection.query("SELECT uid, username FROM users WHERE uid = \(uid) \(lock.clause)") {
                names[TreeKey(try row.decode(String.self, at: 0))] = try row.decode(String?.self, at: 1)
            }
        }
        func username(_ uid: String) throws -> String? {
            guard let name = names[TreeKey(uid)] else { throw StorageError(.notFound, "no user \(uid)") }
            return name
        }
        return (try username(a), try username(b))
    }

    private func pairChats(_ a: String, _ b: String) throws -> [Chat] {
        try connection.query(
            """
            SELECT \(Self.chatColumns) FROM (
                SELECT DISTINCT ON (chat_key) * FROM chats
                WHERE uid IN (\(a), \(b)) AND members @> ARRAY[\(a), \(b)]::text[] AND cardinality(members) = 2
                ORDER BY chat_key, uid = \(a) DESC) c
            ORDER BY member_hash IS NOT DISTINCT FROM \(ChatMemberHash.stableText(a, b)) DESC,
                last_message_sent DESC NULLS LAST, chat_key
            """
        ).map(Self.chat(from:))
    }

    /// Writes each member's copy, creating those missing, with `lastMessage` and `lastMessageSent` from the chat's
    /// newest message; a stale copy of those fields in `extra` would win over the columns on export, so it goes.
    private func writeCopies(chatKey: String, members: [String], title: String?, memberHash: String?) throws -> [Chat] {
        for member in members { try copies.chatCopyHeld(chatKey: chatKey, by: member) }
        return try connection.query(
            """
            INSERT INTO chats AS c (uid, chat_key, title, member_hash, members, last_message, last_message_sent)
            SELECT u.uid, \(chatKey), \(title), \(memberHash), \(members), n.sender_username || ': ' || n.content,
                n."timestamp"
            FROM unnest(\(members)) AS u(uid),
                (SELECT sender_username, content, "timestamp" FROM messages
                 WHERE chat_key = \(chatKey) AND "timestamp" IS NOT NULL
                 ORDER BY "timestamp" DESC, message_key DESC LIMIT 1) n
            ON CONFLICT (uid, chat_key) DO UPDATE
            SET last_message = EXCLUDED.last_message, last_message_sent = EXCLUDED.last_message_sent,
                extra = nullif(c.extra - '{lastMessage,lastMessageSent}'::text[], '{}')
            RETURNING \(Self.chatColumns)
            """
        ).map(Self.chat(from:))
    }

    /// The advisory lock class of chat pairs (`'chat'`), apart from the single-key lock of maintenance.
    static let chatLockClass: Int32 = 0x6368_6174

    /// The advisory lock key of a pair, the same whichever order the uids come in.
    static func chatLockKey(_ a: String, _ b: String) -> Int32 {
        let hash = ChatMemberHash.stable(a, b)
        return Int32(truncatingIfNeeded: hash ^ (hash >> 32))
    }

    static let chatColumns: Query = "uid, chat_key, title, member_hash, members, last_message, last_message_sent"

    static func chat(from row: StoreRow) throws -> Chat {
        Chat(
            uid: try row.decode(at: 0), key: try row.decode(at: 1), title: try row.decode(at: 2),
            memberHash: try row.decode(at: 3), members: try row.decode([String]?.self, at: 4) ?? [],
            lastMessage: try row.decode(at: 5), lastMessageSent: try row.decode(at: 6))
    }

    static let messageColumns: Query = "chat_key, message_key, content, \"timestamp\", sender_uid, sender_username"

    static func message(from row: StoreRow) throws -> Message {
        Message(
            chatKey: try row.decode(at: 0), key: try row.decode(at: 1), content: try row.decode(at: 2),
            timestamp: try row.decode(at: 3), senderUID: try row.decode(at: 4), senderUsername: try row.decode(at: 5))
    }
}
