import FirebaseTree
import Foundation

extension Store {
    /// Creates `/users/{uid}` with its username; fails if the uid is taken or not a valid key.
    public func addUser(uid: String, username: String) throws -> User {
        try app.addUser(uid: uid, username: username)
    }

    /// The user and the sizes of their lists, or nil when there is no such user.
    public func user(_ uid: String) throws -> UserSummary? {
        try app.user(uid)
    }

    /// Sets the username; with `propagate`, also the `poster` copy in each of the user's posts.
    /// Returns how many posts were updated.
    public func renameUser(uid: String, to username: String, propagate: Bool) throws -> Int {
        try app.renameUser(uid: uid, to: username, propagate: propagate)
    }

    /// Users in uid order, `limit` at a time after `after` (keyset paging).
    public func users(limit: Int, after: String? = nil) throws -> [User] {
        try app.users(limit: limit, after: after)
    }

    /// Uids that start with `prefix`, in order, at most `limit` (console completion); an index range scan.
    public func uids(startingWith prefix: String, limit: Int) throws -> [String] {
        try app.uids(startingWith: prefix, limit: limit)
    }

    /// Creates the post under its owner with a new push ID, `created_at` now, `like_count` 0 and the
    /// `poster` copy, and its entries in the owner's and every follower's timeline, in one transaction; the fan-out
    /// is one statement. Returns the post and how many timeline entries were written.
    public func createPost(
        owner: String, imageURL: String, imageHeight: Double, pushIDs: PushIDGenerator = .shared,
        now: Date = Date()
    ) throws -> (post: Post, timelineEntries: Int) {
        try app.createPost(owner: owner, imageURL: imageURL, imageHeight: imageHeight, pushIDs: pushIDs, now: now)
    }

    /// Deletes the post, its likes and its timeline entries, in one transaction. Returns the rows removed
    /// per table.
    public func deletePost(owner: String, key: String) throws -> [(table: String, rows: Int)] {
        try app.deletePost(owner: owner, key: key)
    }

    /// A user's posts, newest first (push IDs sort by creation time), `limit` at a time before `before`.
    public func posts(of owner: String, limit: Int, before: String? = nil) throws -> [Post] {
        try app.posts(of: owner, limit: limit, before: before)
    }

    /// Adds `/postLikes/{post}/{uid}` and raises the post's `like_count`, only if the like is new. Concurrent
    /// likes are safe: the insert decides (a second like of the same user conflicts and counts nothing) and the
    /// increment is applied under the post's row lock. `count` is the new like count.
    public func like(_ uid: String, post key: String) throws -> LikeResult {
        try app.like(uid, post: key)
    }

    /// Removes the like and lowers `like_count` (never below 0), only if the like existed.
    public func unlike(_ uid: String, post key: String) throws -> LikeResult {
        try app.unlike(uid, post: key)
    }

    /// Writes `/following/{follower}/{followee}` and `/followers/{followee}/{follower}` and adds the
    /// followee's posts to the follower's timeline, in one transaction. Idempotent; following oneself is refused.
    /// `count` is the number of timeline entries added.
    public func follow(_ follower: String, _ followee: String) throws -> FollowResult {
        try app.follow(follower, followee)
    }

    /// Removes both follow edges and the followee's posts from the follower's timeline, in one
    /// transaction. Idempotent. `count` is the number of timeline entries removed.
    public func unfollow(_ follower: String, _ followee: String) throws -> FollowResult {
        try app.unfollow(follower, followee)
    }

    /// The posts of a user's timeline, newest first, each with its poster, like count and whether the
    /// user liked it; `limit` at a time before the post key `before` (keyset paging, no OFFSET).
    public func timeline(of uid: String, limit: Int, before: String? = nil) throws -> [TimelineEntry] {
        try app.timeline(of: uid, limit: limit, before: before)
    }

    /// AppCoda's posts newest first (by `timestamp`, then id), keyset-paged.
    public func feed(_ page: FeedPage, limit: Int) throws -> [FeedPost] {
        try app.feed(page, limit: limit)
    }

    /// The LISTEN/NOTIFY channel of new messages (`/messages/{chat}/{key}`); migration 0004 describes the events.
    public static let messagesChannel = ChangeChannel.messages

    /// The LISTEN/NOTIFY channel of changed chat copies (`/chats/{uid}/{chat}`).
    public static let chatsChannel = ChangeChannel.chats

    /// The chats of the pair, best first: a two-member chat whose copy either user holds, those
    /// with the stable member hash first, then the most recently used. More than one means duplicates (the check
    /// `chat_duplicates`). Fails when either user does not exist.
    public func chats(between a: String, _ b: String) throws -> [Chat] {
        try app.chats(between: a, b)
    }

    /// Appends a message from `sender` to their chat with `recipient`, creating the chat on the first
    /// message (a copy for each member, titled `"<sender>, <recipient>"`, with the stable member hash), and sets
    /// `lastMessage` and `lastMessageSent` on every copy; announces the message and the changed copies on
    /// `messagesChannel` and `chatsChannel`. One transaction. Refused unless `sender` follows `recipient` (the
    /// app's rule), for a chat with oneself, and for an empty message.
    public func sendMessage(
        from sender: String, to recipient: String, text: String, pushIDs: PushIDGenerator = .shared,
        clock: () -> Date = Date.init
    ) throws -> SentMessage {
        try app.sendMessage(from: sender, to: recipient, text: text, pushIDs: pushIDs, clock: clock)
    }

    /// A user's chats, the most recently used first.
    public func chats(of uid: String, limit: Int) throws -> [Chat] {
        try app.chats(of: uid, limit: limit)
    }

    /// The `limit` newest messages of a chat before the key `before` (keyset paging), oldest first as
    /// a chat shows them. Fails when no copy of the chat and no message of it exist.
    public func messages(in chatKey: String, limit: Int, before: String? = nil) throws -> [Message] {
        try app.messages(in: chatKey, limit: limit, before: before)
    }

    /// Streams each new message of the chat as it commits. Fails when there is no such chat.
    public func watchMessages(in chatKey: String) throws -> Watch<Message> {
        try app.watchMessages(in: chatKey)
    }

    /// Streams each change to one of the user's chat copies as it commits. Fails when there is no such
    /// user.
    public func watchChats(of uid: String) throws -> Watch<ChatChange> {
        try app.watchChats(of: uid)
    }

    /// Which page of AppCoda's feed to read.
    public typealias FeedPage = Storage.FeedPage
}
