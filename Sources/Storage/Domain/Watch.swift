import FirebaseTree
import Foundation
internal import PostgresClient

/// Changes announced on a LISTEN/NOTIFY channel (migration 0004), read as the app's observers saw them: each
/// committed change, in commit order, as the change left it. The store's connection is given over to the watch
/// until `stop()`.
///
/// ```swift
/// let watch = try store.watchMessages(in: chatKey)
/// while !interrupted {
///     for message in try watch.next(waitingAtMost: 0.25) { show(message) }
/// }
/// try watch.stop()
/// ```
public final class Watch<Change> {
    /// Turns an event's path (below the watched node) and data into a change; nil skips the event. `data` is nil
    /// when the event was too long to carry it, or the node is gone: the closure reads the node itself.
    typealias Decode = (_ keys: [String], _ data: TreeValue?) throws -> Change?

    private let connection: StoreConnection
    private let channel: String
    private let prefix: [String]
    private let decode: Decode
    private var isStopped = false

    init(connection: StoreConnection, channel: String, prefix: [String], decode: @escaping Decode) throws {
        self.connection = connection
        self.channel = channel
        self.prefix = prefix
        self.decode = decode
        try connection.listen(channel)
    }

    /// The changes committed since the last call, waiting up to `timeout` seconds when there are none yet.
    public func next(waitingAtMost timeout: TimeInterval) throws -> [Change] {
        var changes: [Change] = []
        for notification in try connection.notifications(waitingAtMost: timeout) where notification.channel == channel {
            guard let event = try? TreeValue.parse(json: notification.payload), case .string(let path)? = event["path"]
            else { continue }
            // Paths are Firebase paths, whose keys cannot contain "/"; split by scalars, as a key may start with a
            // combining mark.
            let keys = path.unicodeScalars.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map {
                String(String.UnicodeScalarView($0))
            }
            guard keys.count > prefix.count, keys.starts(with: prefix) else { continue }
            if let change = try decode(Array(keys[prefix.count...]), event["data"]) { changes.append(change) }
        }
        return changes
    }

    /// Stops listening, so the connection can serve other work.
    public func stop() throws {
        guard !isStopped else { return }
        isStopped = true
        try connection.unlisten(channel)
    }
}

/// A change to one copy of a chat, as `chats --follow` reports it.
public struct ChatChange: Sendable, Equatable {
    /// Whose copy changed.
    public var uid: String
    /// The chat.
    public var key: String
    /// The copy as the change left it; nil when it was deleted (a merge).
    public var chat: Chat?
}

extension AppOperations {
    /// `Store.watchMessages`: see there.
    func watchMessages(in chatKey: String) throws -> Watch<Message> {
        try reads.readingSnapshot { try requireChat(chatKey) }
        return try Watch(connection: connection, channel: ChangeChannel.messages, prefix: ["messages", chatKey]) {
            keys, data in
            guard keys.count == 1 else { return nil }
            guard let data else {
                return try self.connection.query(
                    """
                    SELECT \(Self.messageColumns) FROM messages
                    WHERE chat_key = \(chatKey) AND message_key = \(keys[0])
                    """
                ).first.map(Self.message(from:))
            }
            return Message(
                chatKey: chatKey, key: keys[0], content: data["content"]?.text, timestamp: data["timestamp"]?.number,
                senderUID: data["sender"]?["uid"]?.text, senderUsername: data["sender"]?["username"]?.text)
        }
    }

    /// `Store.watchChats`: see there.
    func watchChats(of uid: String) throws -> Watch<ChatChange> {
        try reads.readingSnapshot { try requireUser(uid, lock: .none) }
        return try Watch(connection: connection, channel: ChangeChannel.chats, prefix: ["chats", uid]) { keys, data in
            guard keys.count == 1 else { return nil }
            guard let data else {
                let chat = try self.connection.query(
                    """
                    SELECT \(Self.chatColumns) FROM chats WHERE uid = \(uid) AND chat_key = \(keys[0])
                    """
                ).first.map(Self.chat(from:))
                return ChatChange(uid: uid, key: keys[0], chat: chat)
            }
            let members = data["members"]?.children?.keys.map(\.string).sorted {
                $0.utf8.lexicographicallyPrecedes($1.utf8)
            }
            return ChatChange(
                uid: uid, key: keys[0],
                chat: Chat(
                    uid: uid, key: keys[0], title: data["title"]?.text, memberHash: data["memberHash"]?.text,
                    members: members ?? [], lastMessage: data["lastMessage"]?.text,
                    lastMessageSent: data["lastMessageSent"]?.number))
        }
    }
}

extension TreeValue {
    /// The string, when this is a string leaf.
    var text: String? {
        if case .string(let text) = self { return text }
        return nil
    }

    /// The number, when this is a number leaf.
    var number: Double? {
        if case .number(let number) = self { return number }
        return nil
    }
}

/// The LISTEN/NOTIFY channels the store's triggers announce changes on (migration 0004 describes the events).
enum ChangeChannel {
    /// New messages (`/messages/{chat}/{key}`).
    static let messages = "admin_messages"
    /// Changed chat copies (`/chats/{uid}/{chat}`).
    static let chats = "admin_chats"
}
