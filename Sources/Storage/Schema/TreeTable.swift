/// The tables an import writes, with their COPY column lists.
enum TreeTable: Int, CaseIterable {
    case users, posts, feedPosts, postLikes, followers, following, timeline, chats, messages, unmappedValues

    var name: String {
        switch self {
        case .users: "users"
        case .posts: "posts"
        case .feedPosts: "feed_posts"
        case .postLikes: "post_likes"
        case .followers: "followers"
        case .following: "following"
        case .timeline: "timeline"
        case .chats: "chats"
        case .messages: "messages"
        case .unmappedValues: "unmapped_values"
        }
    }

    /// Columns in the order the importer encodes them: the keys, a record's typed columns (`recordColumns`)
    /// and its `extra`.
    var columns: [String] { Self.columnLists[rawValue] }

    /// Made once: export asks for every row. Indexed by raw value, which is the case's index.
    private static let columnLists: [[String]] = allCases.map { table in
        switch table {
        case .unmappedValues: ["root", "path", "string_value", "number_value", "boolean_value", "sort_key"]
        case _ where table.isLeaf: table.keyColumns
        default: table.keyColumns + table.recordColumns.map(\.name) + ["extra"]
        }
    }

    /// Whether a row is a leaf (`true`: a like, a follow) rather than a record.
    var isLeaf: Bool { [.postLikes, .followers, .following].contains(self) }

    /// The key columns that address a row below the table's root node, outermost first.
    var keyColumns: [String] { Self.keyColumnLists[rawValue] }

    private static let keyColumnLists: [[String]] = allCases.map(\.makeKeyColumns)

    private var makeKeyColumns: [String] {
        switch self {
        case .users: ["uid"]
        case .posts: ["owner_uid", "post_key"]
        case .feedPosts: ["post_id"]
        case .postLikes: ["post_key", "liker_uid"]
        case .followers: ["uid", "follower_uid"]
        case .following: ["uid", "followee_uid"]
        case .timeline: ["uid", "post_key"]
        case .chats: ["uid", "chat_key"]
        case .messages: ["chat_key", "message_key"]
        case .unmappedValues: []
        }
    }

    /// How many path levels below the root the table's key spans.
    var keyDepth: Int {
        switch self {
        case .users, .feedPosts: 1
        case .unmappedValues: 0
        default: 2
        }
    }

    /// The top-level node the table's rows live under; nil for `unmapped_values`, which names its own.
    var rootKey: String? {
        switch self {
        case .users: "users"
        case .posts, .feedPosts: "posts"
        case .postLikes: "postLikes"
        case .followers: "followers"
        case .following: "following"
        case .timeline: "timeline"
        case .chats: "chats"
        case .messages: "messages"
        case .unmappedValues: nil
        }
    }

    /// The typed tables under a top-level key.
    static func tables(under root: String) -> [TreeTable] {
        allCases.filter { $0.rootKey == root }
    }
}
