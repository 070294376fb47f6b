import Foundation
internal import PostgresClient

extension AppOperations {
    /// `Store.like`: see there.
    func like(_ uid: String, post key: String) throws -> LikeResult {
        try Self.requirePath("postLikes", key, uid)
        return try connection.withTransaction {
            // A like has a row per owner of its key (migration 0015), each placed with its post.
            let changes = try requireLiker(uid, post: key).map { owner in
                let liked = try connection.query(
                    """
                    INSERT INTO post_likes (post_owner_uid, post_key, liker_uid) VALUES (\(owner), \(key), \(uid))
                    ON CONFLICT DO NOTHING RETURNING 1
                    """
                ).count
                return (owner, liked)
            }
            return try changeLikeCounts(of: key, by: changes)
        }
    }

    /// `Store.unlike`: see there.
    func unlike(_ uid: String, post key: String) throws -> LikeResult {
        try connection.withTransaction {
            let changes = try requireLiker(uid, post: key).map { owner in
                let unliked = try connection.query(
                    """
                    DELETE FROM post_likes WHERE post_owner_uid = \(owner) AND post_key = \(key) AND liker_uid = \(uid)
                    RETURNING 1
                    """
                ).count
                return (owner, -unliked)
            }
            return try changeLikeCounts(of: key, by: changes)
        }
    }

    /// Adds each owner's `delta` (+1, -1 or 0) to the like count of that owner's post `key` (one owner, but for a
    /// key two owners share), never below 0; a post whose count is missing gets its likes counted instead. Each
    /// statement names the post by its owner, so that on Citus it runs on the owner's shard alone.
    private func changeLikeCounts(of key: String, by changes: [(owner: String, delta: Int)]) throws -> LikeResult {
        var counts: [Int] = []
        for (owner, delta) in changes {
            if delta != 0 {
                let updated = try connection.query(
                    """
                    UPDATE posts SET like_count = greatest(like_count + \(delta), 0)
                    WHERE owner_uid = \(owner) AND post_key = \(key) AND like_count IS NOT NULL
                    RETURNING like_count
                    """)
                if let row = updated.first {
                    counts.append(try row.decode(Int.self, at: 0))
                    continue
                }
                let likes = try connection.query(
                    "SELECT count(*) FROM post_likes WHERE post_owner_uid = \(owner) AND post_key = \(key)"
                )[0].decode(Int.self, at: 0)
                try connection.execute(
                    "UPDATE posts SET like_count = \(likes) WHERE owner_uid = \(owner) AND post_key = \(key)")
                counts.append(likes)
            } else if let count = try connection.query(
                "SELECT like_count FROM posts WHERE owner_uid = \(owner) AND post_key = \(key)"
            ).first?.decode(Int?.self, at: 0) {
                counts.append(count)
            }
        }
        return LikeResult(changed: changes.contains { $0.delta != 0 }, likeCount: counts.max() ?? 0)
    }

    /// Fails unless the user and a post with this key exist; returns the post's owners (one, but for a key two
    /// owners share). The user's row and the posts' rows are locked FOR KEY SHARE until the transaction ends:
    /// none of them can be deleted meanwhile (a like committed after its post's deletion would be an orphan). The
    /// owners are found first, so that each post is locked by its owner, in lock order (shared/distributed-postgres.md,
    /// rule 16).
    func requireLiker(_ uid: String, post key: String) throws -> [String] {
        try requireUser(uid)
        let owners = try copies.owners(ofPostKey: key)
        let locked = try Self.inLockOrder(owners, uid: { $0 }).filter { owner in
            try !connection.query(
                "SELECT 1 FROM posts WHERE owner_uid = \(owner) AND post_key = \(key) FOR KEY SHARE"
            ).isEmpty
        }
        guard !locked.isEmpty else { throw StorageError(.notFound, "no post \(key)") }
        return locked
    }
}
