import Foundation
internal import PostgresClient

extension AppOperations {
    /// `Store.createPost`: see there.
    func createPost(
        owner: String, imageURL: String, imageHeight: Double, pushIDs: PushIDGenerator = .shared,
        now: Date = Date()
    ) throws -> (post: Post, timelineEntries: Int) {
        try Self.requireString(imageURL, "image URL")
        guard imageHeight.isFinite else { throw StorageError(.refused, "the image height must be a finite number") }
        let key = pushIDs.next()
        let createdAt = now.timeIntervalSince1970
        return try connection.withTransaction {
            let rows = try connection.query(
                """
                INSERT INTO posts (owner_uid, post_key, image_url, image_height, created_at, like_count, poster_uid,
                    poster_username)
                SELECT uid, \(key), \(imageURL), \(imageHeight), \(createdAt), 0, uid, username
                FROM users WHERE uid = \(owner) FOR NO KEY UPDATE
                RETURNING poster_username
                """)
            guard let row = rows.first else { throw StorageError(.notFound, "no user \(owner)") }
            let post = Post(
                ownerUID: owner, key: key, imageURL: imageURL, imageHeight: imageHeight, createdAt: createdAt,
                likeCount: 0, posterUID: owner, posterUsername: try row.decode(at: 0))
            try copies.postAdded(key: key, owner: owner)
            return (post, try fanOut(post: key, of: owner))
        }
    }

    /// The most followers whose entries `fanOut` sends as rows on Citus; beyond, the coordinator selects them.
    static let fanOutRows = 2048

    /// Writes the entry of `owner`'s new post `key` into the timelines of the owner and of each follower; returns
    /// how many. One statement selects the followers and writes their entries. On Citus, up to `fanOutRows`
    /// followers are read first and their entries sent as rows instead: a multi-row INSERT goes to each
    /// follower's shard at once, where the `INSERT … SELECT` from the followers' one shard into many goes through
    /// the coordinator (1,179 entries: 0.24-0.28 s against 0.45-0.56 s a command; 11,819: 0.85 s in pages of
    /// rows against 0.55 s). On one server the rows would cost the client's round trip and their parameters
    /// (0.08-0.10 s a command against 0.06-0.09 s). The poster's row lock keeps follows of the poster out
    /// meanwhile (`lockFollowPair`).
    private func fanOut(post key: String, of owner: String) throws -> Int {
        let fromFollowers: Query = "FROM followers WHERE uid = \(owner) AND follower_uid <> \(owner)"
        var entries: Query = """
            SELECT \(owner), \(key), \(owner)
            UNION ALL
            SELECT follower_uid, \(key), \(owner) \(fromFollowers)
            """
        if try distribution.isDistributed() {
            let followers = try connection.query(
                "SELECT follower_uid \(fromFollowers) LIMIT \(Self.fanOutRows + 1)"
            ).map { try $0.decode(String.self, at: 0) }
            if followers.count <= Self.fanOutRows {
                entries =
                    "VALUES \(([owner] + followers).map { "(\($0), \(key), \(owner))" as Query }.joined(separator: ", "))"
            }
        }
        // Rows returned, not the command tag, which Citus makes the rows read (Citus issue 3377).
        return try connection.query(
            """
            INSERT INTO timeline (uid, post_key, poster_uid) \(entries)
            ON CONFLICT (uid, post_key) DO UPDATE SET poster_uid = EXCLUDED.poster_uid
            RETURNING 1
            """
        ).count
    }

    /// `Store.deletePost`: see there.
    func deletePost(owner: String, key: String) throws -> [(table: String, rows: Int)] {
        try connection.withTransaction {
            try requireUser(owner, lock: .noKeyUpdate)
            let posts = try connection.execute("DELETE FROM posts WHERE owner_uid = \(owner) AND post_key = \(key)")
            guard posts == 1 else { throw StorageError(.notFound, "no post \(key) of user \(owner)") }
            // Another owner's post under the same key keeps the likes and entries that are its own: the likes
            // stay in the tree, only this owner's rows of them go (migration 0015).
            let shared = try copies.postRemoved(key: key, owner: owner)
            let likes = try connection.execute(
                "DELETE FROM post_likes WHERE post_owner_uid = \(owner) AND post_key = \(key)")
            let entries = try connection.execute(
                "DELETE FROM timeline WHERE post_key = \(key) AND poster_uid = \(owner)")
            return [("posts", posts), ("post_likes", shared ? 0 : likes), ("timeline", entries)]
        }
    }

    /// `Store.posts`: see there.
    func posts(of owner: String, limit: Int, before: String? = nil) throws -> [Post] {
        try reads.readingSnapshot {
            try connection.query(
                """
                SELECT \(Self.postColumns) FROM posts p
                WHERE p.owner_uid = \(owner) AND (\(before) IS NULL OR p.post_key < \(before))
                ORDER BY p.post_key DESC LIMIT \(limit)
                """
            ).map { try Self.post(from: $0) }
        }
    }

    static let postColumns: Query = """
        p.owner_uid, p.post_key, p.image_url, p.image_height, p.created_at, p.like_count, p.poster_uid, p.poster_username
        """

    static func post(from row: StoreRow, at offset: Int = 0) throws -> Post {
        Post(
            ownerUID: try row.decode(at: offset), key: try row.decode(at: offset + 1),
            imageURL: try row.decode(at: offset + 2), imageHeight: try row.decode(at: offset + 3),
            createdAt: try row.decode(at: offset + 4), likeCount: try row.decode(at: offset + 5),
            posterUID: try row.decode(at: offset + 6), posterUsername: try row.decode(at: offset + 7))
    }
}
