internal import PostgresClient

/// The tables an import writes, each described once (`description`).
enum TreeTable: Int, CaseIterable {
    case users, posts, feedPosts, postLikes, followers, following, timeline, chats, messages, unmappedValues

    /// The table, described: every property below derives from it.
    var description: TableDescription { Self.descriptions[rawValue] }

    /// Indexed by raw value, which is the case's index.
    private static let descriptions: [TableDescription] = allCases.map(\.makeDescription)

    private var makeDescription: TableDescription {
        let byUser = TablePlacement.distributed(column: "uid", colocateWith: "users")
        switch self {
        case .users:
            return TableDescription(
                name: "users", root: "users", keyColumns: ["uid"], rows: .records([.init("username", .text)]),
                placement: .distributed(column: "uid", colocateWith: nil), batchKey: "uid")
        case .posts:
            return TableDescription(
                name: "posts", root: "posts", keyColumns: ["owner_uid", "post_key"],
                rows: .records([
                    .init("image_url", .text), .init("image_height", .number), .init("created_at", .number),
                    .init("like_count", .integer), .init("poster_uid", .text, key: "poster", member: "uid"),
                    .init("poster_username", .text, key: "poster", member: "username"),
                ]),
                placement: .distributed(column: "owner_uid", colocateWith: "users"),
                lookup: LookupDescription(
                    name: "post_keys", placement: .distributed(column: "post_key", colocateWith: "feed_posts")),
                batchKey: "post_key")
        case .feedPosts:
            return TableDescription(
                name: "feed_posts", root: "posts", keyColumns: ["post_id"],
                rows: .records([
                    .init("image_file_url", .text, key: "imageFileURL"), .init("user_name", .text, key: "user"),
                    .init("votes", .integer), .init("timestamp_ms", .number, key: "timestamp"),
                ]),
                placement: .distributed(column: "post_id", colocateWith: nil))
        case .postLikes:
            // Placed by the liked post's owner, beside the post (migration 0015).
            return TableDescription(
                name: "post_likes", root: "postLikes", keyColumns: ["post_key", "liker_uid"], rows: .edges,
                placement: .distributed(column: "post_owner_uid", colocateWith: "users"))
        case .followers:
            return TableDescription(
                name: "followers", root: "followers", keyColumns: ["uid", "follower_uid"], rows: .edges,
                placement: byUser)
        case .following:
            return TableDescription(
                name: "following", root: "following", keyColumns: ["uid", "followee_uid"], rows: .edges,
                placement: byUser)
        case .timeline:
            return TableDescription(
                name: "timeline", root: "timeline", keyColumns: ["uid", "post_key"],
                rows: .records([.init("poster_uid", .text)]), placement: byUser)
        case .chats:
            return TableDescription(
                name: "chats", root: "chats", keyColumns: ["uid", "chat_key"],
                rows: .records([
                    .init("title", .text), .init("member_hash", .text, key: "memberHash"), .init("members", .keys),
                    .init("last_message", .text, key: "lastMessage"),
                    .init("last_message_sent", .number, key: "lastMessageSent"),
                ]),
                placement: byUser,
                lookup: LookupDescription(
                    name: "chat_holders", placement: .distributed(column: "chat_key", colocateWith: "messages")),
                batchKey: "chat_key")
        case .messages:
            return TableDescription(
                name: "messages", root: "messages", keyColumns: ["chat_key", "message_key"],
                rows: .records([
                    .init("content", .text), .init("timestamp", .number),
                    .init("sender_uid", .text, key: "sender", member: "uid"),
                    .init("sender_username", .text, key: "sender", member: "username"),
                ]),
                placement: .distributed(column: "chat_key", colocateWith: nil))
        case .unmappedValues:
            return TableDescription(
                name: "unmapped_values", root: nil, keyColumns: [], rows: .unmappedLeaves, placement: .reference)
        }
    }

    /// The table's name.
    var name: String { description.name }

    /// Columns in the order the importer encodes them: the keys, a record's typed columns (`recordColumns`)
    /// and its `extra`; `UnmappedColumn`'s for unmapped values.
    var columns: [String] { Self.columnLists[rawValue] }

    /// Made once: export asks for every row.
    private static let columnLists: [[String]] = allCases.map { table in
        switch table.description.rows {
        case .unmappedLeaves: UnmappedColumn.allCases.map(\.name)
        case .edges: table.keyColumns
        case .records(let columns): table.keyColumns + columns.map(\.name) + ["extra"]
        }
    }

    /// Whether a row is an edge (`true`: a like, a follow) rather than a record.
    var isLeaf: Bool { Self.leafTables[rawValue] }

    /// The key columns that address a row below the table's root node, outermost first.
    var keyColumns: [String] { Self.keyColumnLists[rawValue] }

    /// How many path levels below the root the table's key spans.
    var keyDepth: Int { Self.keyDepths[rawValue] }

    /// The top-level node the table's rows live under; nil for `unmapped_values`, which names its own.
    var rootKey: String? { Self.roots[rawValue] }

    // What import and export ask of every row, made once.
    private static let leafTables = allCases.map { table in
        if case .edges = table.description.rows { return true }
        return false
    }
    private static let keyColumnLists = allCases.map(\.description.keyColumns)
    private static let keyDepths = allCases.map(\.description.keyColumns.count)
    private static let roots = allCases.map(\.description.root)

    /// The typed tables under a top-level key.
    static func tables(under root: String) -> [TreeTable] {
        allCases.filter { $0.rootKey == root }
    }
}

extension TreeTable {
    /// The tables that hold the tree, in the order `status` lists them.
    static let names = allCases.map(\.name)

    /// Tables the store keeps from the tree's tables, in the same transaction as every write (`Store.lookupTables`).
    static let lookupNames = HeldRecords.all.map(\.lookup)

    /// The tree's tables and the lookups kept from them, quoted and separated by commas, in the order every
    /// statement that locks several of them takes them (so that none waits for another in a cycle).
    static let lockList = Query.identifiers(names + lookupNames)
}

extension PlannedTable {
    /// Firebase Auth's accounts (migration 0024), kept beside the users they sign in as: their providers and
    /// password hashes by uid, the project's hash parameters (one row) on every node. Not part of the tree.
    static let authTableNames = [
        "auth_accounts", "auth_providers", "auth_secrets.password_hashes", "auth_secrets.hash_config",
    ]

    /// The distribution plan (`Store.distributionPlan`): the user group, the chat group, AppCoda's feed and the
    /// post-key lookup, the leftover values on every node, and the Auth accounts; a table comes after the one it
    /// is co-located with.
    static let plan: [PlannedTable] =
        TreeTable.allCases.map { PlannedTable(name: $0.name, placement: $0.description.placement) }
        + TreeTable.allCases.compactMap { table in
            table.description.lookup.map { PlannedTable(name: $0.name, placement: $0.placement) }
        }
        + authTableNames.map { name in
            PlannedTable(
                name: name,
                placement: name == "auth_secrets.hash_config"
                    ? .reference : .distributed(column: "uid", colocateWith: "users"))
        }
}
