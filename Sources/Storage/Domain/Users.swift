import FirebaseTree
import Foundation
internal import PostgresClient

/// The app's operations on users, posts, likes, follows, timelines and chats, each in one transaction, keeping
/// every copy the app kept by hand in step.
struct AppOperations {
    /// The connection they run on.
    let connection: StoreConnection
    /// The lookups kept from /posts and /chats, which every write keeps in step.
    let copies: DerivedCopies
    /// The snapshot a read of several statements runs in.
    let reads: Reads
    /// Whether the tables are distributed, which changes how some writes are best phrased.
    let distribution: Distribution

    /// `Store.addUser`: see there.
    func addUser(uid: String, username: String) throws -> User {
        try Self.requirePath("users", uid)
        guard uid.utf8.count <= Self.maximumUIDBytes else {
            throw StorageError(
                .refused,
                "a uid of \(uid.utf8.count) bytes is too long: at most \(Self.maximumUIDBytes) fit in every path a user's key is part of"
            )
        }
        try Self.requireString(username, "username")
        return try connection.withTransaction {
            let inserted = try connection.execute(
                """
                INSERT INTO users (uid, username) VALUES (\(uid), \(username)) ON CONFLICT (uid) DO NOTHING
                """)
            guard inserted == 1 else {
                throw StorageError(.refused, "user \(uid) already exists")
            }
            return User(uid: uid, username: username)
        }
    }

    /// `Store.user`: see there.
    func user(_ uid: String) throws -> UserSummary? {
        let rows = try reads.readingSnapshot {
            try connection.query(
                """
                SELECT u.uid, u.username,
                    (SELECT count(*) FROM posts WHERE owner_uid = u.uid),
                    (SELECT count(*) FROM followers WHERE uid = u.uid),
                    (SELECT count(*) FROM following WHERE uid = u.uid),
                    (SELECT count(*) FROM timeline WHERE uid = u.uid)
                FROM users u WHERE u.uid = \(uid)
                """)
        }
        guard let row = rows.first else { return nil }
        return UserSummary(
            user: User(uid: try row.decode(at: 0), username: try row.decode(at: 1)), posts: try row.decode(at: 2),
            followers: try row.decode(at: 3), following: try row.decode(at: 4), timelineEntries: try row.decode(at: 5))
    }

    /// `Store.renameUser`: see there.
    func renameUser(uid: String, to username: String, propagate: Bool) throws -> Int {
        try Self.requireString(username, "username")
        return try connection.withTransaction {
            guard try connection.execute("UPDATE users SET username = \(username) WHERE uid = \(uid)") == 1 else {
                throw StorageError(.notFound, "no user \(uid)")
            }
            guard propagate else { return 0 }
            return try connection.execute(
                """
                UPDATE posts SET poster_uid = owner_uid, poster_username = \(username)
                WHERE owner_uid = \(uid)
                    AND (poster_uid IS DISTINCT FROM owner_uid OR poster_username IS DISTINCT FROM \(username))
                """)
        }
    }

    /// `Store.users`: see there.
    func users(limit: Int, after: String? = nil) throws -> [User] {
        try reads.readingSnapshot {
            try connection.query(
                """
                SELECT uid, username FROM users WHERE \(after) IS NULL OR uid > \(after)
                ORDER BY uid LIMIT \(limit)
                """
            ).map { User(uid: try $0.decode(at: 0), username: try $0.decode(at: 1)) }
        }
    }

    /// `Store.uids`: see there.
    func uids(startingWith prefix: String, limit: Int) throws -> [String] {
        try connection.query(
            """
            SELECT uid FROM users
            WHERE uid >= \(prefix) AND uid < \(prefix) || chr(1114111) AND starts_with(uid, \(prefix))
            ORDER BY uid LIMIT \(limit)
            """
        ).map { try $0.decode(String.self, at: 0) }
    }

    /// How an operation locks a user's row, which is what serializes the operations that could otherwise each
    /// miss the other's write: a post created by B and a follow of B (the new follower would miss the post), a
    /// post deleted and a follow (the follower would get an entry of a deleted post).
    enum UserLock {
        /// Reading only.
        case none
        /// The user must not vanish before the transaction ends.
        case keyShare
        /// `follow`/`unfollow` of this user: many may run at once, but not with a post change of the user.
        case share
        /// `post create`/`post delete` by this user, and `follow`/`unfollow` by this user: waits for follows of the
        /// user, and they for it.
        case noKeyUpdate

        /// The SELECT's locking clause.
        var clause: Query {
            switch self {
            case .none: ""
            case .keyShare: "FOR KEY SHARE"
            case .share: "FOR SHARE"
            case .noKeyUpdate: "FOR NO KEY UPDATE"
            }
        }
    }

    /// `items` in the order their rows are locked: by the uid each names, byte-wise. Every operation that locks
    /// several rows (two users, a post under each owner) takes them in this order and one per statement, so that
    /// two operations locking the same rows wait for each other instead of deadlocking, and so that Citus locks
    /// each by its distribution column.
    static func inLockOrder<Item>(_ items: [Item], uid: (Item) -> String) -> [Item] {
        items.sorted { uid($0).utf8.lexicographicallyPrecedes(uid($1).utf8) }
    }

    /// Fails unless `uid` names a user, locking its row as `lock` says until the transaction ends.
    func requireUser(_ uid: String, lock: UserLock = .keyShare) throws {
        guard try !connection.query("SELECT 1 FROM users WHERE uid = \(uid) \(lock.clause)").isEmpty else {
            throw StorageError(.notFound, "no user \(uid)")
        }
    }

    /// Refuses a write of the node at `path` that import would refuse, so that every export can be imported.
    static func requirePath(_ path: String...) throws {
        if let problem = FirebaseKey.problem(withPath: path) {
            throw StorageError(.refused, "cannot write /\(path.joined(separator: "/")): \(problem)")
        }
    }

    /// Refuses a string value that import would refuse.
    static func requireString(_ text: String, _ what: String) throws {
        if let problem = FirebaseKey.problem(withString: text) {
            throw StorageError(.refused, "\(what): \(problem)")
        }
    }

    /// The longest uid `user add` takes: the user's node in every table that a single uid keys, with a push ID
    /// beside it (`/postLikes/{post}/{uid}`), stays within Firebase's path limit.
    static let maximumUIDBytes = FirebaseKey.maximumPathBytes - "/postLikes//".utf8.count - PushIDGenerator.keyLength
}
