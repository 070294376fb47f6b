import Foundation
import Storage

/// Tables of the domain's records, shared by the commands that list them.
enum DomainViews {
    /// Users, one per row.
    static func users(_ users: [User]) -> ResultTable {
        ResultTable(columns: ["uid", "username"], rows: users.map { [.text($0.uid), cell($0.username)] })
    }

    /// Posts, one per row; `liked` adds whether the timeline's owner liked each.
    static func posts(_ posts: [Post], liked: [Bool]? = nil) -> ResultTable {
        var columns = ["key", "owner", "poster", "created_at", "likes", "image_height", "image_url"]
        if liked != nil { columns.insert("liked", at: 5) }
        let rows: [[Cell]] = posts.enumerated().map { index, post in
            var row: [Cell] = [
                .text(post.key), .text(post.ownerUID), cell(post.posterUsername), cell(time(seconds: post.createdAt)),
                post.likeCount.map(Cell.integer) ?? .null, post.imageHeight.map(Cell.number) ?? .null,
                cell(post.imageURL),
            ]
            if let liked { row.insert(.boolean(liked[index]), at: 5) }
            return row
        }
        return ResultTable(columns: columns, rows: rows)
    }

    /// AppCoda feed posts, one per row.
    static func feed(_ posts: [FeedPost]) -> ResultTable {
        ResultTable(
            columns: ["id", "user", "timestamp", "time", "votes", "image_file_url"],
            rows: posts.map { post in
                [
                    .text(post.id), cell(post.user), post.timestamp.map(Cell.number) ?? .null,
                    cell(time(seconds: post.timestamp.map { $0 / 1000 })), post.votes.map(Cell.integer) ?? .null,
                    cell(post.imageFileURL),
                ]
            })
    }

    /// Chat copies, one per row.
    static func chats(_ chats: [Chat]) -> ResultTable {
        ResultTable(columns: chatColumns, rows: chats.map(chatRow))
    }

    static let chatColumns = ["key", "title", "members", "last_message", "last_message_sent", "time", "member_hash"]

    static func chatRow(_ chat: Chat) -> [Cell] {
        [
            .text(chat.key), cell(chat.title), .list(chat.members), cell(chat.lastMessage),
            chat.lastMessageSent.map(Cell.number) ?? .null, cell(time(seconds: chat.lastMessageSent)),
            cell(chat.memberHash),
        ]
    }

    /// Messages, one per row.
    static func messages(_ messages: [Message]) -> ResultTable {
        ResultTable(columns: messageColumns, rows: messages.map(messageRow))
    }

    static let messageColumns = ["key", "timestamp", "time", "sender_uid", "sender", "content"]

    static func messageRow(_ message: Message) -> [Cell] {
        [
            .text(message.key), message.timestamp.map(Cell.number) ?? .null, cell(time(seconds: message.timestamp)),
            cell(message.senderUID), cell(message.senderUsername), cell(message.content),
        ]
    }

    /// A message as a chat log line: `time  sender: content`.
    static func logLine(_ message: Message) -> String {
        "\(time(seconds: message.timestamp) ?? "-")  \(message.senderUsername ?? message.senderUID ?? "?"): \(message.content ?? "")"
    }

    /// A change of a chat copy as a row; a deleted copy has its key and nothing else.
    static func chatChangeRow(_ change: ChatChange) -> [Cell] {
        change.chat.map(chatRow) ?? [.text(change.key)] + Array(repeating: .null, count: chatColumns.count - 1)
    }

    /// A change of a chat copy as a log line: `time  key  title: last message`, or `key  (removed)`.
    static func logLine(_ change: ChatChange) -> String {
        guard let chat = change.chat else { return "\(change.key)  (removed)" }
        return
            "\(time(seconds: chat.lastMessageSent) ?? "-")  \(chat.key)  \(chat.title ?? "(no title)"): \(chat.lastMessage ?? "")"
    }

    /// "1 post", "2 posts".
    static func count(_ number: Int, _ singular: String) -> String {
        "\(number) \(singular)\(number == 1 ? "" : "s")"
    }

    /// Bytes as megabytes for a summary line: "12.4 MB".
    static func megabytes(_ bytes: Int) -> String {
        String(format: "%.1f MB", Double(bytes) / 1_000_000)
    }

    /// A duration for a summary line: "1.329 s", "3.8 ms", "0.41 ms"; never "0.000 s" for work that was fast.
    static func duration(_ seconds: Double) -> String {
        switch seconds {
        case 1...: String(format: "%.3f s", seconds)
        case 0.001...: String(format: "%.1f ms", seconds * 1000)
        default: String(format: "%.2f ms", seconds * 1000)
        }
    }

    static func cell(_ text: String?) -> Cell {
        text.map(Cell.text) ?? .null
    }

    /// A time in seconds since 1970 as UTC ISO 8601 with milliseconds.
    static func time(seconds: Double?) -> String? {
        guard let seconds else { return nil }
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: Date(timeIntervalSince1970: seconds))
    }
}
