import Foundation
internal import PostgresClient

extension AppOperations {
    /// `Store.timeline`: see there.
    func timeline(of uid: String, limit: Int, before: String? = nil) throws -> [TimelineEntry] {
        try reads.readingSnapshot {
            try requireUser(uid, lock: .none)
            // The page of entries first, from the reader's shard; then its posts and the reader's likes of them,
            // which both live beside their poster, by the posters' uids. On Citus one statement with the page as
            // a subquery joined it with every shard's posts and likes: 81 ms a page, warm, at 20,000 users,
            // against 8-13 ms this way (one server: about 1 ms either way).
            let page = try connection.query(
                """
                SELECT post_key, poster_uid FROM timeline
                WHERE uid = \(uid) AND (\(before) IS NULL OR post_key < \(before))
                ORDER BY post_key DESC
                LIMIT \(limit)
                """
            ).compactMap { row in
                // An entry without a poster names no post: the page shows the others.
                try row.decode(String?.self, at: 1).map { (key: try row.decode(String.self, at: 0), poster: $0) }
            }
            guard !page.isEmpty else { return [] }
            let (posters, keys) = (page.map(\.poster), page.map(\.key))
            return try connection.query(
                """
                SELECT \(Self.postColumns), l.post_key IS NOT NULL
                FROM posts p
                LEFT JOIN post_likes l
                    ON l.post_owner_uid = p.owner_uid AND l.post_key = p.post_key AND l.liker_uid = \(uid)
                WHERE p.owner_uid = ANY (\(posters))
                    AND (p.owner_uid, p.post_key) IN (SELECT * FROM unnest(\(posters)::text[], \(keys)::text[]))
                ORDER BY p.post_key DESC
                """
            ).map { TimelineEntry(post: try Self.post(from: $0), isLiked: try $0.decode(at: 8)) }
        }
    }

    /// `Store.feed`: see there.
    func feed(_ page: FeedPage, limit: Int) throws -> [FeedPost] {
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
