import Foundation
import PostgresClient
import Storage

/// `maintenance`: imports one generated export, then times every check (`Store.check`, as `admin check` runs it)
/// and every repair (as a dry run) next to a hand-written SQL statement doing the same work on the typed tables
/// alone, run on the same connection the same number of times, in a transaction that is rolled back.
struct MaintenanceBenchmark {
    let file: String
    let runs: Int
    let work: String

    /// What a DBA would write for each check: a count over the typed tables, without the tree_* views (which also
    /// look at unmapped values), the materialized examples, the snapshot or the lock.
    static let bareChecks: [IntegrityCheck: Query] = [
        .likeCount: """
        SELECT count(*) FROM posts p LEFT JOIN (SELECT post_key, count(*) AS n FROM post_likes GROUP BY 1) l
        USING (post_key) WHERE p.like_count IS DISTINCT FROM coalesce(l.n, 0)
        """,
        .poster: """
        SELECT count(*) FROM posts p LEFT JOIN users u ON u.uid = p.owner_uid
        WHERE p.poster_uid IS DISTINCT FROM p.owner_uid OR p.poster_username IS DISTINCT FROM u.username
        """,
        .timelineMissing: """
        SELECT count(*) FROM (SELECT u.uid, p.post_key FROM users u JOIN posts p ON p.owner_uid = u.uid
            UNION SELECT f.uid, p.post_key FROM following f JOIN users u ON u.uid = f.uid
            JOIN posts p ON p.owner_uid = f.followee_uid) e
        WHERE NOT EXISTS (SELECT FROM timeline t WHERE t.uid = e.uid AND t.post_key = e.post_key)
        """,
        .timelineExtra: """
        SELECT count(*) FROM timeline t WHERE EXISTS (SELECT FROM posts p WHERE p.post_key = t.post_key)
        AND (NOT EXISTS (SELECT FROM users u WHERE u.uid = t.uid) OR NOT EXISTS (SELECT FROM posts p
            WHERE p.post_key = t.post_key AND p.owner_uid = t.poster_uid AND (p.owner_uid = t.uid
            OR EXISTS (SELECT FROM following f WHERE f.uid = t.uid AND f.followee_uid = p.owner_uid))))
        """,
        .followAsymmetric: """
        SELECT count(*) FROM following f FULL JOIN followers r ON r.uid = f.followee_uid AND r.follower_uid = f.uid
        WHERE f.uid IS NULL OR r.uid IS NULL
        """,
        .chatCopies: """
        SELECT count(*) FROM (SELECT chat_key FROM chats GROUP BY chat_key
        HAVING count(DISTINCT title) > 1 OR count(DISTINCT members) > 1 OR count(DISTINCT last_message) > 1
            OR count(DISTINCT last_message_sent) > 1
            OR array_agg(uid ORDER BY uid) <> (SELECT array_agg(DISTINCT m ORDER BY m) FROM chats o,
                unnest(o.members) m WHERE o.chat_key = chats.chat_key)) c
        """,
        .chatMemberHash:
            "SELECT count(*) FROM (SELECT FROM chats GROUP BY chat_key HAVING count(DISTINCT member_hash) > 1) c",
        .chatHashLegacy: """
        SELECT count(DISTINCT chat_key) FROM chats
        WHERE cardinality(members) = 2 AND member_hash IS DISTINCT FROM chat_member_hash(members[1], members[2])
        """,
        .chatDuplicates: """
        SELECT count(*) FROM (SELECT members FROM (SELECT DISTINCT chat_key, members FROM chats
        WHERE cardinality(members) = 2) c GROUP BY members HAVING count(*) > 1) d
        """,
        .chatLastMessage: """
        SELECT count(DISTINCT c.chat_key) FROM chats c JOIN (SELECT DISTINCT ON (chat_key) * FROM messages
        ORDER BY chat_key, "timestamp" DESC) n USING (chat_key)
        WHERE c.last_message IS DISTINCT FROM n.sender_username || ': ' || n.content
            OR c.last_message_sent IS DISTINCT FROM n."timestamp"
        """,
        .orphans: """
        SELECT (SELECT count(*) FROM post_likes l WHERE NOT EXISTS (SELECT FROM posts p WHERE p.post_key = l.post_key))
        + (SELECT count(*) FROM messages m WHERE NOT EXISTS (SELECT FROM chats c WHERE c.chat_key = m.chat_key))
        + (SELECT count(*) FROM timeline t WHERE NOT EXISTS (SELECT FROM posts p WHERE p.post_key = t.post_key))
        """,
    ]

    /// The same work as each repair, written directly against the typed tables.
    static let bareRepairs: [Repair: [Query]] = [
        .likeCounts: [
            """
            UPDATE posts p SET like_count = c.n FROM (SELECT q.owner_uid, q.post_key, count(l.liker_uid) AS n
                FROM posts q LEFT JOIN post_likes l USING (post_key) GROUP BY 1, 2) c
            WHERE p.owner_uid = c.owner_uid AND p.post_key = c.post_key AND p.like_count IS DISTINCT FROM c.n
            """
        ],
        .posters: [
            """
            UPDATE posts p SET poster_uid = p.owner_uid, poster_username = u.username FROM users u
            WHERE u.uid = p.owner_uid
                AND (p.poster_uid IS DISTINCT FROM p.owner_uid OR p.poster_username IS DISTINCT FROM u.username)
            """
        ],
        .timelines: [
            """
            DELETE FROM timeline t WHERE EXISTS (SELECT FROM posts p WHERE p.post_key = t.post_key)
            AND NOT EXISTS (SELECT FROM posts p WHERE p.post_key = t.post_key AND EXISTS (SELECT FROM users u WHERE u.uid = t.uid)
                AND (p.owner_uid = t.uid OR EXISTS (SELECT FROM following f WHERE f.uid = t.uid AND f.followee_uid = p.owner_uid)))
            """,
            """
            INSERT INTO timeline (uid, post_key, poster_uid)
            SELECT DISTINCT ON (uid, post_key) uid, post_key, owner_uid FROM (
                SELECT u.uid, p.post_key, p.owner_uid FROM users u JOIN posts p ON p.owner_uid = u.uid
                UNION ALL SELECT f.uid, p.post_key, p.owner_uid FROM following f JOIN users u ON u.uid = f.uid
                JOIN posts p ON p.owner_uid = f.followee_uid) e
            WHERE NOT EXISTS (SELECT FROM timeline t WHERE t.uid = e.uid AND t.post_key = e.post_key)
            ORDER BY uid, post_key, owner_uid
            """,
        ],
        .chatHashes: [
            """
            UPDATE chats SET member_hash = chat_member_hash(members[1], members[2])
            WHERE cardinality(members) = 2 AND member_hash IS DISTINCT FROM chat_member_hash(members[1], members[2])
            """
        ],
        .follows: [
            """
            INSERT INTO followers (uid, follower_uid) SELECT followee_uid, uid FROM following f
            WHERE NOT EXISTS (SELECT FROM followers r WHERE r.uid = f.followee_uid AND r.follower_uid = f.uid)
            """,
            """
            INSERT INTO following (uid, followee_uid) SELECT follower_uid, uid FROM followers r
            WHERE NOT EXISTS (SELECT FROM following f WHERE f.uid = r.follower_uid AND f.followee_uid = r.uid)
            """,
        ],
        .chats: [
            """
            UPDATE chats c SET last_message = n.sender_username || ': ' || n.content, last_message_sent = n."timestamp"
            FROM (SELECT DISTINCT ON (chat_key) * FROM messages ORDER BY chat_key, "timestamp" DESC, message_key DESC) n
            WHERE c.chat_key = n.chat_key AND (c.last_message IS DISTINCT FROM n.sender_username || ': ' || n.content
                OR c.last_message_sent IS DISTINCT FROM n."timestamp")
            """
        ],
        .orphans: [
            "DELETE FROM post_likes l WHERE NOT EXISTS (SELECT FROM posts p WHERE p.post_key = l.post_key)",
            "DELETE FROM messages m WHERE NOT EXISTS (SELECT FROM chats c WHERE c.chat_key = m.chat_key)",
            "DELETE FROM timeline t WHERE NOT EXISTS (SELECT FROM posts p WHERE p.post_key = t.post_key)",
        ],
    ]

    func run() throws {
        let (cluster, _, conninfo) = try openBenchmarkServer(work: work)
        defer { cluster.close() }
        let store = try Store(conninfo: conninfo)
        try store.migrate()
        // The benchmark's own statements (set-up, the bare SQL it compares with) go on a connection of its own.
        let sql = try Connection(conninfo: conninfo)
        let posts = try sql.query("SELECT count(*) FROM posts")[0].decode(Int.self, at: 0)
        if posts == 0 {
            FileHandle.standardError.write(Data("importing \(file)…\n".utf8))
            let descriptor = open(file, O_RDONLY)
            defer { close(descriptor) }
            _ = try store.importTree(from: FileDescriptorSource(descriptor: descriptor, name: file))
            try sql.execute("VACUUM ANALYZE")
        }
        var counts: [String] = []
        for table in ["posts", "post_likes", "timeline", "following", "followers", "chats", "messages", "users"] {
            let rows = try sql.query("SELECT count(*) FROM \(identifier: table)")[0].decode(Int.self, at: 0)
            counts.append("\(table) \(rows)")
        }
        print("data: \(file): " + counts.joined(separator: ", "))
        print("| work | violations / rows | admin median s | bare SQL median s | ratio |")
        print("|---|---|---|---|---|")
        var totalAdmin = 0.0, totalBare = 0.0
        for check in IntegrityCheck.allCases {
            var result: CheckResult?
            let admin = median(try (0..<runs).map { _ in try seconds { result = try store.check([check])[0] } })
            var bareCount = 0
            let bare = median(
                try (0..<runs).map { _ in
                    try seconds {
                        bareCount = try sql.query(Self.bareChecks[check]!)[0].decode(Int.self, at: 0)
                    }
                })
            totalAdmin += admin
            totalBare += bare
            let counts = result!.violations == bareCount ? "\(bareCount)" : "\(result!.violations) (bare: \(bareCount))"
            print(
                "| check \(check.rawValue) | \(counts) | \(String(format: "%.2f", admin)) | \(String(format: "%.2f", bare)) | \(String(format: "%.2f×", admin / bare)) |"
            )
        }
        print(
            "| whole check (sum) | | \(String(format: "%.2f", totalAdmin)) | \(String(format: "%.2f", totalBare)) | \(String(format: "%.2f×", totalAdmin / totalBare)) |"
        )
        for repair in Repair.fixOrder {
            var report: RepairReport?
            let admin = median(
                try (0..<runs).map { _ in
                    try seconds { report = try store.repair(repair, options: RepairOptions(isDryRun: true)) }
                })
            let bare = median(
                try (0..<runs).map { _ in
                    try seconds {
                        try sql.withTransaction(rollback: true) {
                            for statement in Self.bareRepairs[repair]! { try sql.execute(statement) }
                        }
                    }
                })
            print(
                "| repair .\(repair) (dry run) | \(report!.rowsChanged) | \(String(format: "%.2f", admin)) | \(String(format: "%.2f", bare)) | \(String(format: "%.2f×", admin / bare)) |"
            )
        }
    }
}
