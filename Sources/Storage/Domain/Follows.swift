import FirebaseTree
import Foundation
internal import PostgresClient

extension AppOperations {
    /// `Store.follow`: see there.
    func follow(_ follower: String, _ followee: String) throws -> FollowResult {
        guard !FirebaseKey.same(follower, followee) else {
            throw StorageError(.refused, "a user cannot follow themselves")
        }
        try Self.requirePath("following", follower, followee)
        try Self.requirePath("followers", followee, follower)
        return try connection.withTransaction {
            try lockFollowPair(follower, followee)
            // Rows returned, not command tags: through a Citus coordinator, an INSERT ... SELECT ... ON CONFLICT DO
            // NOTHING is tagged with the rows it read (Citus issue 3377).
            let following = try connection.query(
                """
                INSERT INTO following (uid, followee_uid) VALUES (\(follower), \(followee)) ON CONFLICT DO NOTHING
                RETURNING 1
                """
            ).count
            let followers = try connection.query(
                """
                INSERT INTO followers (uid, follower_uid) VALUES (\(followee), \(follower)) ON CONFLICT DO NOTHING
                RETURNING 1
                """
            ).count
            let entries = try connection.query(
                """
                INSERT INTO timeline (uid, post_key, poster_uid)
                SELECT \(follower), post_key, owner_uid FROM posts WHERE owner_uid = \(followee)
                ON CONFLICT (uid, post_key) DO NOTHING
                RETURNING 1
                """
            ).count
            return FollowResult(changed: following + followers + entries > 0, timelineEntries: entries)
        }
    }

    /// `Store.unfollow`: see there.
    func unfollow(_ follower: String, _ followee: String) throws -> FollowResult {
        guard !FirebaseKey.same(follower, followee) else {
            throw StorageError(.refused, "a user cannot unfollow themselves")
        }
        return try connection.withTransaction {
            try lockFollowPair(follower, followee)
            let following = try connection.execute(
                "DELETE FROM following WHERE uid = \(follower) AND followee_uid = \(followee)")
            let followers = try connection.execute(
                "DELETE FROM followers WHERE uid = \(followee) AND follower_uid = \(follower)")
            let entries = try connection.execute(
                "DELETE FROM timeline WHERE uid = \(follower) AND poster_uid = \(followee)")
            return FollowResult(changed: following + followers + entries > 0, timelineEntries: entries)
        }
    }

    /// Locks both users of a follow change: the follower's row exclusively, so that follows and unfollows of one
    /// pair run one after the other (at once, an unfollow could delete the timeline entries of a follow that
    /// committed between its statements and leave the follow without them), and the followee's row as `.share`.
    /// The rows are locked in uid order, so that `follow a b` and `follow b a` at once wait instead of deadlocking.
    private func lockFollowPair(_ follower: String, _ followee: String) throws {
        let locks: [(String, UserLock)] = [(follower, .noKeyUpdate), (followee, .share)]
        for (uid, lock) in Self.inLockOrder(locks, uid: \.0) {
            try requireUser(uid, lock: lock)
        }
    }
}
