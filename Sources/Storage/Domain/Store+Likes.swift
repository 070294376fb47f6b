import Foundation
import PostgresClient

extension Store {
    /// `like`: adds `/postLikes/{post}/{uid}` and raises the post's `like_count`, only if the like is new, in one
    /// statement. Concurrent likes are safe: the insert decides (a second like of the same user conflicts and
    /// counts nothing) and the increment is applied under the post's row lock. `count` is the new like count.
    public func like(_ uid: String, post key: String) throws -> OperationResult {
        try Self.requirePath("postLikes", key, uid)
        return try connection.withTransaction {
            try requireLiker(uid, post: key)
            let row = try connection.query(
                """
                WITH liked AS (
                    INSERT INTO post_likes (post_key, liker_uid) VALUES (\(key), \(uid))
                    ON CONFLICT DO NOTHING RETURNING post_key),
                counted AS (
                    UPDATE posts SET like_count = CASE
                        WHEN like_count IS NULL THEN (SELECT count(*) + 1 FROM post_likes WHERE post_key = \(key))
                        ELSE like_count + 1 END
                    WHERE post_key IN (SELECT post_key FROM liked) RETURNING like_count)
                SELECT (SELECT count(*) FROM liked),
                    coalesce((SELECT max(like_count) FROM counted),
                             (SELECT max(like_count) FROM posts WHERE post_key = \(key)))
                """)[0]
            return OperationResult(
                changed: try row.decode(Int.self, at: 0) > 0, count: try row.decode(Int?.self, at: 1) ?? 0)
        }
    }

    /// `unlike`: removes the like and lowers `like_count` (never below 0), only if the like existed.
    public func unlike(_ uid: String, post key: String) throws -> OperationResult {
        try connection.withTransaction {
            try requireLiker(uid, post: key)
            let row = try connection.query(
                """
                WITH unliked AS (
                    DELETE FROM post_likes WHERE post_key = \(key) AND liker_uid = \(uid) RETURNING post_key),
                counted AS (
                    UPDATE posts SET like_count = CASE
                        WHEN like_count IS NULL THEN (SELECT greatest(count(*) - 1, 0) FROM post_likes WHERE post_key = \(key))
                        ELSE greatest(like_count - 1, 0) END
                    WHERE post_key IN (SELECT post_key FROM unliked) RETURNING like_count)
                SELECT (SELECT count(*) FROM unliked),
                    coalesce((SELECT max(like_count) FROM counted),
                             (SELECT max(like_count) FROM posts WHERE post_key = \(key)))
                """)[0]
            return OperationResult(
                changed: try row.decode(Int.self, at: 0) > 0, count: try row.decode(Int?.self, at: 1) ?? 0)
        }
    }

    /// Fails unless the user and a post with this key exist, in one round trip. Both rows are locked FOR KEY
    /// SHARE until the transaction ends: neither can be deleted meanwhile (a like committed after its post's
    /// deletion would be an orphan).
    func requireLiker(_ uid: String, post key: String) throws {
        let row = try connection.query(
            """
            SELECT EXISTS (SELECT FROM (SELECT FROM users WHERE uid = \(uid) FOR KEY SHARE) u),
                EXISTS (SELECT FROM (SELECT FROM posts WHERE post_key = \(key) FOR KEY SHARE) p)
            """)[0]
        guard try row.decode(Bool.self, at: 0) else { throw StorageError(.notFound, "no user \(uid)") }
        guard try row.decode(Bool.self, at: 1) else { throw StorageError(.notFound, "no post \(key)") }
    }
}
