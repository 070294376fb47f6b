import Foundation

/// `/users/{uid}`.
public struct User: Sendable, Equatable {
    /// The user's key.
    public var uid: String
    /// `username`, when the tree has one.
    public var username: String?
}

/// A user and the sizes of their lists.
public struct UserSummary: Sendable, Equatable {
    /// The user.
    public var user: User
    /// Posts under `/posts/{uid}`.
    public var posts: Int
    /// Children of `/followers/{uid}`.
    public var followers: Int
    /// Children of `/following/{uid}`.
    public var following: Int
    /// Entries of `/timeline/{uid}`.
    public var timelineEntries: Int
}

/// `/posts/{owner}/{key}` of the Makestagram tree.
public struct Post: Sendable, Equatable {
    /// The owner's uid.
    public var ownerUID: String
    /// The post's push ID.
    public var key: String
    /// `image_url`.
    public var imageURL: String?
    /// `image_height`.
    public var imageHeight: Double?
    /// `created_at`, in seconds since 1970.
    public var createdAt: Double?
    /// `like_count`.
    public var likeCount: Int?
    /// `poster.uid`.
    public var posterUID: String?
    /// `poster.username`.
    public var posterUsername: String?
}

/// One post of a timeline, as the app showed it.
public struct TimelineEntry: Sendable, Equatable {
    /// The post, with its poster and like count.
    public var post: Post
    /// Whether the timeline's owner liked it.
    public var isLiked: Bool
}

/// `/posts/{id}` of AppCoda's feed.
public struct FeedPost: Sendable, Equatable {
    /// The post's key.
    public var id: String
    /// `imageFileURL`.
    public var imageFileURL: String?
    /// `user`, a display name.
    public var user: String?
    /// `votes`.
    public var votes: Int?
    /// `timestamp`, in milliseconds since 1970.
    public var timestamp: Double?
}

/// What a like or an unlike did.
public struct LikeResult: Sendable, Equatable {
    /// False when the like was already there (like) or was not (unlike): nothing changed.
    public var changed: Bool
    /// The post's `like_count` afterwards.
    public var likeCount: Int
}

/// What a follow or an unfollow did.
public struct FollowResult: Sendable, Equatable {
    /// False when the follow was already there (follow) or was not (unfollow): nothing changed.
    public var changed: Bool
    /// The timeline entries added (follow) or removed (unfollow).
    public var timelineEntries: Int
}

/// One member's copy of a chat, `/chats/{uid}/{key}`.
public struct Chat: Sendable, Equatable {
    /// The member whose copy this is.
    public var uid: String
    /// The chat's key, shared by the copies.
    public var key: String
    /// `title`: the usernames of the creator and the other member, `"a, b"`.
    public var title: String?
    /// `memberHash`.
    public var memberHash: String?
    /// The keys of `members`, in byte order.
    public var members: [String]
    /// `lastMessage`: `"<sender username>: <content>"`.
    public var lastMessage: String?
    /// `lastMessageSent`: the last message's `timestamp`, in seconds since 1970.
    public var lastMessageSent: Double?
}

/// `/messages/{chatKey}/{key}`.
public struct Message: Sendable, Equatable {
    /// The chat it belongs to.
    public var chatKey: String
    /// The message's push ID.
    public var key: String
    /// `content`.
    public var content: String?
    /// `timestamp`, in seconds since 1970.
    public var timestamp: Double?
    /// `sender.uid`.
    public var senderUID: String?
    /// `sender.username`.
    public var senderUsername: String?
}

/// What `chat send` wrote.
public struct SentMessage: Sendable, Equatable {
    /// The sender's copy of the chat, as it is after the message.
    public var chat: Chat
    /// The message.
    public var message: Message
    /// Whether this message created the chat.
    public var createdChat: Bool
}

/// Which page of AppCoda's feed to read.
public enum FeedPage: Sendable, Equatable {
    /// The newest posts.
    case recent
    /// Infinite scroll: posts older than a timestamp (milliseconds), and than a post id at that timestamp.
    case older(than: Double, id: String? = nil)
    /// Pull to refresh: posts newer than a timestamp (milliseconds).
    case newer(than: Double)
}
