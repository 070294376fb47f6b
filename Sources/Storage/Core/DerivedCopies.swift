import FirebaseTree
internal import PostgresClient

/// The app's central rule: what the store derives from who owns which post or holds which chat (migration 0015),
/// kept in step by every write in its own transaction. The like /postLikes/{key}/{liker} is one row per owner of a
/// post with that key, or one row with the owner '' while there is none; `post_keys` lists each post's key and
/// owner; `chat_holders` each chat's key and holders. They are functions of /posts and /chats: the app's
/// operations, import and Firebase's writes, chat merge and the repairs are handed this type (`Store.copies`)
/// and tell it what they changed, rather than writing those tables themselves.
struct DerivedCopies {
    let connection: StoreConnection

    // MARK: One record at a time (the app's operations)

    /// A post was added under `key`: the lookup gains it, and the likes of the key that had no post are now its.
    func postAdded(key: String, owner: String) throws {
        try connection.execute("INSERT INTO post_keys (post_key, owner_uid) VALUES (\(key), \(owner))")
        try adoptUnownedLikes(of: key, owner: owner)
    }

    /// `owner`'s post under `key` was deleted: the lookup loses it; returns whether another owner's post still
    /// has the key (its likes then stay, under that owner).
    func postRemoved(key: String, owner: String) throws -> Bool {
        try connection.execute("DELETE FROM post_keys WHERE post_key = \(key) AND owner_uid = \(owner)")
        return try !connection.query("SELECT 1 FROM post_keys WHERE post_key = \(key)").isEmpty
    }

    /// The owners of the posts with this key, from the lookup: on Citus one shard holds a key's owners, where
    /// posts would ask every shard.
    func owners(ofPostKey key: String) throws -> [String] {
        try connection.query("SELECT owner_uid FROM post_keys WHERE post_key = \(key)").map {
            try $0.decode(String.self, at: 0)
        }
    }

    /// `member` holds a copy of the chat now (one statement per member routes to the chat's shard).
    func chatCopyHeld(chatKey: String, by member: String) throws {
        try connection.execute(
            "INSERT INTO chat_holders (chat_key, uid) VALUES (\(chatKey), \(member)) ON CONFLICT DO NOTHING")
    }

    /// The statement that forgets every holder of chats whose copies are all gone (chats merged away).
    static func chatsForgotten(_ chatKeys: [String]) -> Query {
        "DELETE FROM chat_holders WHERE chat_key = ANY (\(chatKeys))"
    }

    /// The statements that give the chats whose keys the table `keys` lists (column `chat_key`) the holders
    /// their copies now have (a repair rewrote those copies).
    static func chatHoldersSettled(keysIn keys: String) -> [Query] {
        [
            "DELETE FROM chat_holders h USING \(identifier: keys) d WHERE h.chat_key = d.chat_key",
            """
            INSERT INTO chat_holders (chat_key, uid)
            SELECT c.chat_key, c.uid FROM chats c JOIN \(identifier: keys) d ON d.chat_key = c.chat_key
            """,
        ]
    }

    // MARK: Many records at once (import, Firebase's writes)
    /// The temporary table an import copies likes into: in an export /postLikes comes before /posts, so a like's
    /// owners are known only once the whole file is read (`storeStagedLikes`).
    static let stagedLikesTable = "post_likes_staged"

    /// The column of `post_likes` that holds a like's owner, the owner of the post it likes.
    static let likeOwnerColumn = "post_owner_uid"

    /// Creates `stagedLikesTable` for the rest of the transaction.
    func stageLikes() throws {
        try connection.execute(
            """
            CREATE TEMPORARY TABLE \(identifier: Self.stagedLikesTable) (
                post_key text COLLATE "C" NOT NULL, liker_uid text COLLATE "C" NOT NULL) ON COMMIT DROP
            """)
    }

    /// The rows `post_likes` holds for the likes (`post_key`, `liker_uid`) of `likes`, a FROM item: one per owner
    /// of a post with the like's key, or one with the owner '' when no post has it. Posts' keys and owners are
    /// read, on a distributed store, through an OFFSET 0 subquery, which Citus runs first (likes and posts meet
    /// by key, not by the distribution column); one server joins the table itself and finds a few keys by its
    /// index.
    private func likeRows(of likes: Query, isDistributed: Bool) -> Query {
        let posts: Query = isDistributed ? "(SELECT owner_uid, post_key FROM posts OFFSET 0)" : "posts"
        return """
            SELECT coalesce(p.owner_uid, ''), l.post_key, l.liker_uid
            FROM \(likes) l LEFT JOIN \(posts) p ON p.post_key = l.post_key
            """
    }

    /// Moves the likes an import staged into `post_likes`, each with a row per owner of its key ('' when there is
    /// none), and drops the staging table.
    func storeStagedLikes(isDistributed: Bool) throws {
        let staged: Query = "\(identifier: Self.stagedLikesTable)"
        try connection.execute(
            "INSERT INTO post_likes (post_owner_uid, post_key, liker_uid) "
                + likeRows(of: staged, isDistributed: isDistributed))
        try connection.execute("DROP TABLE \(staged)")
    }

    /// Deletes the staged likes at or below `path` (a repeated key's earlier occurrence); returns how many.
    func deleteStagedLikes(under path: [String]) throws -> Int {
        guard path.first == TreeTable.postLikes.rootKey else { return 0 }
        return try connection.execute(
            "DELETE FROM \(identifier: Self.stagedLikesTable) WHERE \(TreeTable.postLikes.keyConditions(path.dropFirst()))"
        )
    }

    /// Gives the likes of the post keys `keys` (nil: of every key) the rows that /posts now says they have: a
    /// post added under a key gains a row of each of its likes, a post removed loses them, and a key left with no
    /// post keeps its likes under the owner ''. The likes of those keys are read with their owners into a
    /// temporary table, deleted, and stored again: Citus can run each of these statements (a DELETE correlated
    /// with a local table it cannot). Run after posts were added or removed other than by `storeStagedLikes`.
    func settleLikeOwners(ofKeys keys: [String]?, isDistributed: Bool) throws {
        let scope: Query = keys.map { "post_key = ANY(\($0))" } ?? "true"
        try connection.execute(
            """
            CREATE TEMPORARY TABLE post_likes_settled (
                post_owner_uid text COLLATE "C" NOT NULL, post_key text COLLATE "C" NOT NULL,
                liker_uid text COLLATE "C" NOT NULL) ON COMMIT DROP
            """)
        try connection.execute(
            "INSERT INTO post_likes_settled "
                + likeRows(
                    of: "(SELECT DISTINCT post_key, liker_uid FROM post_likes WHERE \(scope) OFFSET 0)",
                    isDistributed: isDistributed))
        try connection.execute("DELETE FROM post_likes WHERE \(scope)")
        try connection.execute(
            """
            INSERT INTO post_likes (post_owner_uid, post_key, liker_uid)
            SELECT post_owner_uid, post_key, liker_uid FROM post_likes_settled
            """)
        try connection.execute("DROP TABLE post_likes_settled")
    }

    /// Gives the lookup of `records` (`post_keys`, `chat_holders`) the rows of the keys `keys` (nil: of every key)
    /// that the records now hold.
    func settleLookup(of records: HeldRecords, ofKeys keys: [String]?) throws {
        let scope: Query = keys.map { "\(identifier: records.key) = ANY(\($0))" } ?? "true"
        try connection.execute("DELETE FROM \(identifier: records.lookup) WHERE \(scope)")
        try insertLookupRows(of: records, where: scope)
    }

    /// Fills the empty lookup of `records` from every record (a whole-tree import's).
    ///
    /// On Citus the lookup is placed by key and the records by holder: the rows go through the coordinator
    /// rather than repartitioned between the workers, which took 1.1-1.3 s where this took 0.08-0.2 s for
    /// 50,284 posts or 12,362 chats (20,000 users, two workers on one machine). The import sends every row
    /// through the coordinator already; the lookups are two short columns of two of its tables.
    func fillLookup(of records: HeldRecords, isDistributed: Bool) throws {
        if isDistributed {
            try connection.execute("SELECT set_config('citus.enable_repartitioned_insert_select', 'off', true)")
        }
        try insertLookupRows(of: records, where: "true")
    }

    /// Inserts into the lookup of `records` the key and holder of each record that `scope` selects.
    private func insertLookupRows(of records: HeldRecords, where scope: Query) throws {
        let columns = Query.identifiers([records.key, records.holder])
        try connection.execute(
            """
            INSERT INTO \(identifier: records.lookup) (\(columns))
            SELECT \(columns) FROM \(identifier: records.table) WHERE \(scope)
            """)
    }

    /// Gives the likes of `key` that had no post (owner '') to `owner`, whose new post has that key.
    private func adoptUnownedLikes(of key: String, owner: String) throws {
        try connection.execute(
            """
            INSERT INTO post_likes (post_owner_uid, post_key, liker_uid)
            SELECT \(owner), post_key, liker_uid FROM post_likes WHERE post_owner_uid = '' AND post_key = \(key)
            """)
        try connection.execute("DELETE FROM post_likes WHERE post_owner_uid = '' AND post_key = \(key)")
    }

    /// A record's key and the user holding it, compared by their bytes.
    struct Holding: Hashable {
        var key: TreeKey
        var holder: TreeKey
    }

    /// The records of `records` under the keys `keys` or held by `holders`. Only the holders asked: the query
    /// is one user's, which on Citus goes to that user's shard alone.
    func holdings(of records: HeldRecords, keys: [String], holders: [String]) throws -> Set<Holding> {
        let byKey: Query = "\(identifier: records.key) = ANY(\(keys))"
        let byHolder: Query = "\(identifier: records.holder) = ANY(\(holders))"
        let rows = try connection.query(
            """
            SELECT \(identifier: records.key), \(identifier: records.holder) FROM \(identifier: records.table)
            WHERE \(keys.isEmpty ? byHolder : holders.isEmpty ? byKey : byKey + " OR " + byHolder)
            """)
        return Set(
            try rows.map {
                Holding(
                    key: TreeKey(try $0.decode(String.self, at: 0)), holder: TreeKey(try $0.decode(String.self, at: 1)))
            })
    }
}

/// Records held per user under a root named like their table (/posts/{uid}/{key}, /chats/{uid}/{key}), as the
/// tables derived from who holds which key see them: the tables whose description has a lookup.
struct HeldRecords: Equatable {
    /// The table, and the tree's root.
    var table: String
    /// The column of the user holding the record.
    var holder: String
    /// The column of the record's key.
    var key: String
    /// The lookup of keys and holders kept from the table, with the same two columns.
    var lookup: String

    /// The records of `table`, which has a lookup.
    private init(_ table: TreeTable) {
        guard let lookup = table.description.lookup, table.keyColumns.count == 2 else {
            preconditionFailure("\(table.name) keeps no lookup of its holders")
        }
        self.init(table: table.name, holder: table.keyColumns[0], key: table.keyColumns[1], lookup: lookup.name)
    }

    private init(table: String, holder: String, key: String, lookup: String) {
        (self.table, self.holder, self.key, self.lookup) = (table, holder, key, lookup)
    }

    /// Posts, held by their owner.
    static let posts = HeldRecords(.posts)
    /// Chat copies, held by their member.
    static let chats = HeldRecords(.chats)
    /// Every table with a lookup; their lookups are `Store.lookupTables`.
    static let all = TreeTable.allCases.filter { $0.description.lookup != nil }.map(HeldRecords.init)
}
