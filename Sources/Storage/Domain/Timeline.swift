import Foundation
internal import PostgresClient

extension AppOperations {
    /// `Store.timeline`: see there.
    func timeline(of uid: String, limit: Int, before: String? = nil) throws -> [TimelineEntry] {
        try reads.readingSnapshot {
            try requireUser(uid, lock: .none)
            // The page of entries first, then its posts (by poster, each one's distribution column) and the
            // reader's likes of them: on Citus the timeline, the posts and the likes live on different workers.
            return try connection.query(
                """
                WITH page AS MATERIALIZED (
                    SELECT post_key, poster_uid FROM timeline
                    WHERE uid = \(uid) AND (\(before) IS NULL OR post_key < \(before))
                    ORDER BY post_key DESC
                    LIMIT \(limit)),
                liked AS MATERIALIZED (
                    SELECT post_owner_uid, post_key FROM post_likes
                    WHERE liker_uid = \(uid) AND (post_owner_uid, post_key) IN (SELECT poster_uid, post_key FROM page))
                SELECT \(Self.postColumns), l.post_key IS NOT NULL
                FROM page t
                JOIN posts p ON p.owner_uid = t.poster_uid AND p.post_key = t.post_key
                LEFT JOIN liked l ON l.post_owner_uid = t.poster_uid AND l.post_key = t.post_key
                ORDER BY t.post_key DESC
                """
            ).map { TimelineEntry(post: try Self.post(from: $0), isLiked: try $0.decode(at: 8)) }
        }
    }

    /// `Store.feed`: see there.
    func feed(_ page: Store.FeedPage, limit: Int) throws -> [FeedPost] {
        let columns: Query = "post_id, image_file_url, user_name, votes, timestamp_ms"
        let order: Query = "ORDER BY timestamp_ms DESC, post_id DESC"
        let query: Query =
            switch page {
            case .recent:
                """
                SELECT \(columns) FROM feed_posts WHERE timestamp_ms IS NOT NULL \(order) LIMIT \(limit)
                """
            case .older(let timestamp, nil):
                """
                SELECT \(columns) FROM feed_posts WHERE timestamp_ms < \(timestamp) \(order) LIMIT \(limit)
                """
            case .older(let timestamp, let id?):
                """
                SELECT \(columns) FROM feed_posts WHERE (timestamp_ms, post_id) < (\(timestamp), \(id))
                \(order) LIMIT \(limit)
                """
            case .newer(let timestamp):
                """
                SELECT \(columns) FROM feed_posts WHERE timestamp_ms > \(timestamp) \(order) LIMIT \(limit)
                """
            }
        return try reads.readingSnapshot { try connection.query(query) }.map { row in
            FeedPost(
                id: try row.decode(at: 0), imageFileURL: try row.decode(at: 1), user: try row.decode(at: 2),
                votes: try row.decode(at: 3), timestamp: try row.decode(at: 4))
        }
    }
}
