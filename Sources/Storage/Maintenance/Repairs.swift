import Foundation
internal import PostgresClient

/// The repairs of the hand-kept copies, `check --fix` and chat merges: set-based statements in one
/// transaction (or one per batch of keys), under the maintenance lock.
struct Repairs {
    /// The connection that writes.
    let connection: StoreConnection
    /// The lookups a repair of posts or chats keeps in step.
    let copies: DerivedCopies
    /// Held for each transaction, so that no check, other repair or import runs meanwhile.
    let maintenance: MaintenanceLock
    /// The tree's tables, locked against the app's writes while a repair rewrites them.
    let treeRows: TreeRows
    /// What `check --fix` checks before and after its repairs.
    let checking: Checks
    /// Whether the tables are on Citus, where shards are modified one at a time.
    let distribution: Distribution
    /// Stores the children of /posts named by their ids again, each from its own export (the load pipeline's:
    /// `TreeImport.restorePosts`), in the caller's transaction; the rows it deleted and stored per table.
    let restorePosts: (_ ids: [String]) throws -> (deleted: [TreeTable: Int], stored: [TreeTable: Int])

    /// `Store.repair`: see there.
    func repair(
        _ repair: Repair, options: RepairOptions = RepairOptions(),
        onStep: (_ index: Int, _ count: Int) -> Void = { _, _ in }
    ) throws -> RepairReport {
        if let batchSize = options.batchSize, options.user == nil, repair.isBatchable {
            return try batchedRepair(repair, batchSize: batchSize, options: options, onStep: onStep)
        }
        let clock = ContinuousClock()
        let started = clock.now
        var report = RepairReport(repair: repair, isDryRun: options.isDryRun)
        if repair == .postsShape {
            try restoreMisshapenPosts(options: options, into: &report)
            report.seconds = (clock.now - started).seconds
            return report
        }
        try run(
            isDryRun: options.isDryRun, waitSeconds: options.waitSeconds, onStep: onStep,
            record: { report.add($0) }
        ) {
            try steps(of: repair, options: options)
        }
        report.seconds = (clock.now - started).seconds
        return report
    }

    /// Runs the statements `makeSteps` gives in one transaction under the maintenance lock (rolled back with
    /// `isDryRun`), telling `onStep` of each and `record` of each reported change.
    private func run(
        isDryRun: Bool, waitSeconds: Double, onStep: (_ index: Int, _ count: Int) -> Void,
        record: (RepairReport.Change) -> Void, _ makeSteps: () throws -> [Step]
    ) throws {
        try connection.withTransaction(rollback: isDryRun) {
            try maintenance.take(wait: MaintenanceWait(seconds: waitSeconds))
            try modifyShardsSequentially()
            // What a repair reads and what it writes are of one instant: no write of the tree commits meanwhile
            // (a like counted from a snapshot that missed it would be lost from like_count).
            try treeRows.lockTree()
            let steps = try makeSteps()
            for (index, step) in steps.enumerated() {
                onStep(index, steps.count)
                let rows = try connection.execute(step.query)
                if let (table, action) = step.reported { record(.init(table: table, action: action, rows: rows)) }
            }
        }
    }

    private func batchedRepair(
        _ repair: Repair, batchSize: Int, options: RepairOptions, onStep: (_ index: Int, _ count: Int) -> Void
    ) throws -> RepairReport {
        precondition(batchSize > 0)
        let clock = ContinuousClock()
        let started = clock.now
        // The repair's phases (one, but for orphans a phase per table), each run over ranges of its key: every
        // batchSize-th key starts a range; the first range is open below and the last above, so that rows whose
        // keys are in no driving table (entries of uids that are in no /users) fall in one too.
        let phases: [(key: TreeTable?, steps: (KeyRange) throws -> [Step])] =
            repair == .orphans
            ? Self.orphanStatements.map { statement in (statement.key, { [statement.step($0)] }) }
            : [(repair.batchTable, { try self.steps(of: repair, options: options, range: $0) })]
        let batches = try phases.flatMap { phase in
            let starts =
                try phase.key.map { table in
                    try connection.query(table.batchStartsQuery(every: batchSize)).map {
                        try $0.decode(String.self, at: 0)
                    }
                } ?? []
            return zip([nil] + starts, starts + [nil]).map { (range: KeyRange(from: $0, to: $1), steps: phase.steps) }
        }
        var report = RepairReport(repair: repair, isDryRun: options.isDryRun)
        for (index, batch) in batches.enumerated() {
            onStep(index, batches.count)
            try run(
                isDryRun: options.isDryRun, waitSeconds: options.waitSeconds, onStep: { _, _ in },
                record: { report.add($0) }
            ) {
                try batch.steps(batch.range)
            }
        }
        report.seconds = (clock.now - started).seconds
        return report
    }

    /// The repair of `posts_shape`, which imports rather than runs statements: the misshapen children of /posts
    /// stored again, each from its own export, in one transaction under the maintenance lock.
    private func restoreMisshapenPosts(options: RepairOptions, into report: inout RepairReport) throws {
        try connection.withTransaction(rollback: options.isDryRun) {
            try maintenance.take(wait: MaintenanceWait(seconds: options.waitSeconds))
            try modifyShardsSequentially()
            try treeRows.lockTree()
            let ids = try connection.query("SELECT post_id FROM posts_misshapen(NULL) ORDER BY 1").map {
                try $0.decode(String.self, at: 0)
            }
            guard !ids.isEmpty else { return }
            let (deleted, stored) = try restorePosts(ids)
            for table in TreeTable.allCases {
                if let rows = deleted[table], rows > 0 {
                    report.add(.init(table: table.name, action: .deleted, rows: rows))
                }
                if let rows = stored[table], rows > 0 {
                    report.add(.init(table: table.name, action: .inserted, rows: rows))
                }
            }
        }
    }

    /// `Store.checkAndFix`: see there.
    func checkAndFix(
        _ checks: [IntegrityCheck] = IntegrityCheck.allCases, examples: Int = 5, isDryRun: Bool = false,
        wait: MaintenanceWait = .none, onProgress: (FixStep) -> Void = { _ in }
    ) throws -> (before: [CheckResult], repairs: [RepairReport], after: [CheckResult]) {
        try connection.withTransaction(rollback: isDryRun) {
            // Before the checks: the repairs' statements must find the shards their checks read reached over the
            // one connection per worker they use, or Citus refuses them.
            try modifyShardsSequentially()
            // The locks before the first read, as every read takes them (see `readingSnapshot`): the checks, the
            // repairs and the checks again see the tree as this transaction alone changes it.
            try maintenance.take(wait: wait)
            try treeRows.lockTree()
            let before = try checking.check(checks, examples: examples) { check, index in
                onProgress(.check(check, index: index, of: checks.count, again: false))
            }
            let failing = Set(before.filter { !$0.isClean }.compactMap(\.check.repair))
            // The repairs run as savepoints of this transaction, which alone rolls back in a dry run.
            let repairs = try Repair.fixOrder.filter(failing.contains).map { repair in
                onProgress(.repair(repair))
                var report = try self.repair(repair)
                report.isDryRun = isDryRun
                return report
            }
            let after =
                repairs.isEmpty
                ? before
                : try checking.check(checks, examples: examples) { check, index in
                    onProgress(.check(check, index: index, of: checks.count, again: true))
                }
            return (before, repairs, after)
        }
    }

    /// On Citus, a statement that reads rows an earlier one of the transaction changed fails unless every shard
    /// was reached over one connection per worker; this asks for that until the transaction ends. Plain
    /// PostgreSQL keeps the setting as a placeholder.
    private func modifyShardsSequentially() throws {
        try connection.execute("SELECT set_config('citus.multi_shard_modify_mode', 'sequential', true)")
    }

    /// One statement of a repair: a reported change to a table's rows, or bookkeeping nobody is told of (a
    /// temporary table, a lookup kept in step, a notification).
    struct Step {
        /// The table whose rows `query` changes and how; nil for bookkeeping.
        var reported: (table: String, action: RowAction)?
        var query: Query

        /// A statement whose changed rows the report counts.
        init(table: String, action: RowAction, query: Query) {
            reported = (table, action)
            self.query = query
        }

        /// A statement the report leaves out.
        init(unreported query: Query) {
            reported = nil
            self.query = query
        }
    }

    /// A batch's keys: `from` up to but not including `to`, nil meaning unbounded. Steps compare their batch
    /// column as `(from IS NULL OR column >= from) AND (to IS NULL OR column < to)`, which the planner folds to
    /// the bounds given (or to nothing) since values are bound per statement.
    struct KeyRange {
        var from: String?
        var to: String?

        static let all = KeyRange(from: nil, to: nil)
    }

    private func steps(of repair: Repair, options: RepairOptions, range: KeyRange = .all) throws -> [Step] {
        switch repair {
        case .likeCounts: Self.likeCountSteps(range)
        case .posters: Self.posterSteps(range)
        case .timelines: Self.timelineSteps(user: options.user, range, isDistributed: try distribution.isDistributed())
        case .chatHashes: Self.chatHashSteps(range)
        case .follows: Self.followSteps(preferring: options.followPreference, range)
        case .chats: Self.chatSteps(range)
        case .orphans: Self.orphanSteps(range)
        case .hiddenValues: Self.hiddenValueSteps
        case .postsShape: preconditionFailure("posts_shape is repaired by imports (restoreMisshapenPosts)")
        case .chatMerge: try chatMergeSteps(options.mergedChats)
        }
    }

    /// Children of `/root/{a}/{b}` kept in unmapped_values (values other than the app's), as a WHERE condition.
    private static func unmappedChildren(of root: String, as alias: String = "v") -> Query {
        """
        \(identifier: alias).root = \(root) AND cardinality(\(identifier: alias).path) >= 2
            AND \(identifier: alias).path[1] NOT IN ('.priority', '.value')
            AND \(identifier: alias).path[2] NOT IN ('.priority', '.value')
        """
    }

    /// The values of `columns` of every row of `table`, as a subquery for a FROM list. Citus cannot push a subquery
    /// with OFFSET down, so it runs it first and ships its rows to the workers: this is how a statement joins
    /// tables distributed by different columns (timeline entries and unmapped likes with posts by post key). One
    /// server plans the same hash joins, and runs DML without parallel workers anyway.
    private static func rows(of columns: [String], in table: String) -> Query {
        "(SELECT \(Query.identifiers(columns)) FROM \(identifier: table) OFFSET 0)"
    }

    /// Typed likes and likes kept as unmapped values are counted apart, as the check counts them: typed likes
    /// carry their post's owner (migration 0015), so Citus counts them beside their posts, where counting their
    /// union view first collected every like on the coordinator.
    private static func likeCountSteps(_ range: KeyRange) -> [Step] {
        [
            Step(
                table: "posts", action: .updated,
                query: """
                    UPDATE posts p SET like_count = c.likes, extra = extra_without(p.extra, 'like_count')
                    FROM (SELECT q.owner_uid, q.post_key, coalesce(l.likes, 0) + coalesce(x.likes, 0) AS likes
                          FROM posts q
                          LEFT JOIN (SELECT post_owner_uid, post_key, count(*) AS likes FROM post_likes
                                     GROUP BY post_owner_uid, post_key) l
                              ON l.post_owner_uid = q.owner_uid AND l.post_key = q.post_key
                          LEFT JOIN (SELECT v.path[1] AS post_key, count(DISTINCT v.path[2]) AS likes
                                     FROM unmapped_values v WHERE \(Self.unmappedChildren(of: "postLikes"))
                                     GROUP BY 1) x
                              ON x.post_key = q.post_key
                          WHERE key_in_range(q.owner_uid, \(range.from), \(range.to))
                         ) c
                    WHERE p.owner_uid = c.owner_uid AND p.post_key = c.post_key
                        AND (p.like_count IS DISTINCT FROM c.likes OR extra_without(p.extra, 'like_count') IS DISTINCT FROM p.extra)
                    """)
        ]
    }

    /// The posts to change are found first, with one hash join of posts and users, and only they are updated:
    /// joining the updated table to that join directly made the planner join posts with itself.
    private static func posterSteps(_ range: KeyRange) -> [Step] {
        [
            Step(
                table: "posts", action: .updated,
                query: """
                    WITH wrong AS MATERIALIZED (
                        SELECT q.owner_uid, q.post_key, u.username
                        FROM posts q LEFT JOIN users u ON u.uid = q.owner_uid
                        WHERE key_in_range(q.owner_uid, \(range.from), \(range.to))
                            AND (q.poster_uid IS DISTINCT FROM q.owner_uid OR q.poster_username IS DISTINCT FROM u.username
                                OR (q.extra IS NOT NULL
                                    AND extra_without(q.extra, 'poster', '{uid,username}') IS DISTINCT FROM q.extra)))
                    UPDATE posts p
                    SET poster_uid = p.owner_uid, poster_username = w.username,
                        extra = extra_without(p.extra, 'poster', '{uid,username}')
                    FROM wrong w
                    WHERE p.owner_uid = w.owner_uid AND p.post_key = w.post_key
                    """)
        ]
    }

    /// The timeline repair for one user, or for the users whose uid is in `range`. Timeline entries are placed by
    /// their user, posts by their owner: each statement reads the posts' keys (and owners) through an OFFSET 0
    /// subquery, which Citus ships to the workers, and only in a top-level [NOT] EXISTS or a join, which one
    /// server turns into hash joins (inside an OR it would be a subplan scanning every post per entry). DML gets
    /// no parallel workers on one server, so the shipped lists cost it nothing (measured: BENCHMARKS-LOG.md, Citus).
    ///
    /// On Citus every shard of the timeline reads each list shipped to it and hashes or sorts it: there the posts
    /// go as one row a key with its owner (an array only for a key that several owners share), which serves where
    /// two lists did, and as one row an owner with its keys (grouped on the posts' shards), a quarter of the
    /// rows (BENCHMARKS-LOG.md: 20,000 users at 32 shards, the repair 3.6 s -> 2.3 s). One server keeps the plain
    /// lists, which it hash-joins faster than it groups them.
    private static func timelineSteps(user: String?, _ range: KeyRange, isDistributed: Bool) -> [Step] {
        let postKeys = rows(of: ["post_key"], in: "posts")
        let postOwners = rows(of: ["owner_uid", "post_key"], in: "posts")
        // Entries of an existing post that name another poster than its owner.
        let otherPoster: Query =
            isDistributed
            ? """
            EXISTS (
                SELECT 1
                FROM (SELECT post_key, min(owner_uid) AS owner, CASE WHEN count(*) > 1 THEN array_agg(owner_uid) END AS owners
                      FROM posts GROUP BY post_key OFFSET 0) p
                WHERE p.post_key = t.post_key
                    AND NOT coalesce(t.poster_uid = p.owner OR t.poster_uid = ANY (p.owners), false))
            """
            : """
            EXISTS (SELECT 1 FROM \(postKeys) p WHERE p.post_key = t.post_key)
                AND NOT EXISTS (
                    SELECT 1 FROM \(postOwners) p WHERE p.post_key = t.post_key AND p.owner_uid = t.poster_uid)
            """
        // A followee's posts, as `p.owner_uid` and `p.post_key` joined on `p.owner_uid = f.followee_uid`.
        let followeePosts: Query =
            isDistributed
            ? """
            (SELECT owner_uid, array_agg(post_key) AS keys FROM posts GROUP BY owner_uid OFFSET 0) o
                ON o.owner_uid = f.followee_uid
                CROSS JOIN LATERAL (SELECT o.owner_uid, k AS post_key FROM unnest(o.keys) k) p
            """
            : "\(postOwners) p ON p.owner_uid = f.followee_uid"
        let entries: Query = "(\(user) IS NULL OR t.uid = \(user)) AND key_in_range(t.uid, \(range.from), \(range.to))"
        let readers: Query = "(\(user) IS NULL OR u.uid = \(user)) AND key_in_range(u.uid, \(range.from), \(range.to))"
        let missing: Query = "NOT EXISTS (SELECT 1 FROM timeline t WHERE t.uid = u.uid AND t.post_key = p.post_key)"
        return [
            // Entries that are not objects are replaced by typed ones below when they belong.
            Step(
                table: "unmapped_values", action: .deleted,
                query: """
                    DELETE FROM unmapped_values v
                    WHERE \(Self.unmappedChildren(of: "timeline"))
                        AND (\(user) IS NULL OR v.path[1] = \(user))
                        AND key_in_range(v.path[1], \(range.from), \(range.to))
                        AND EXISTS (SELECT 1 FROM \(postKeys) p WHERE p.post_key = v.path[2])
                    """),
            // Entries of an existing post that name another poster than its owner go…
            Step(
                table: "timeline", action: .deleted,
                query: """
                    DELETE FROM timeline t WHERE \(entries) AND \(otherPoster)
                    """),
            // …and so do those naming the owner that carry a stale poster copy, or whose user is gone or does not
            // follow the owner. These are found first, joined with the user's row and follow list (placed with
            // the entry), behind OFFSET 0: neither PostgreSQL nor Citus can estimate how few entries fail, and
            // asked with the posts in one step they probe the follow list per entry (one server: 2.0 s instead
            // of 0.9 s on the 232 MB store) or loop over the posts per shard (Citus, 20k users: 266 s instead of
            // 0.3 s; BENCHMARKS-LOG.md).
            Step(
                table: "timeline", action: .deleted,
                query: """
                    DELETE FROM timeline t
                    WHERE (t.uid, t.post_key) IN (
                        SELECT s.uid, s.post_key
                        FROM (SELECT t.uid, t.post_key, t.poster_uid
                              FROM timeline t
                                  LEFT JOIN users u ON u.uid = t.uid
                                  LEFT JOIN following f ON f.uid = t.uid AND f.followee_uid = t.poster_uid
                              WHERE \(entries)
                                  AND ((t.extra IS NOT NULL
                                        AND extra_without(t.extra, 'poster_uid') IS DISTINCT FROM t.extra)
                                       OR u.uid IS NULL
                                       OR (t.poster_uid <> t.uid AND f.uid IS NULL
                                           AND NOT EXISTS (
                                               SELECT 1 FROM unmapped_values v
                                               WHERE v.root = 'following' AND v.path[1] = t.uid
                                                   AND v.path[2] = t.poster_uid)))
                              OFFSET 0) s
                        WHERE EXISTS (
                            SELECT 1 FROM \(postOwners) p WHERE p.post_key = s.post_key AND p.owner_uid = s.poster_uid))
                    """),
            // The entries each user should have (own posts and followees' posts, the follow typed or unmapped)
            // that are missing, each branch anti-joined with the timeline rows placed with its user, and only
            // the missing ones deduplicated (expected entries run to millions).
            Step(
                table: "timeline", action: .inserted,
                query: """
                    INSERT INTO timeline (uid, post_key, poster_uid)
                    SELECT DISTINCT ON (uid, post_key) uid, post_key, poster_uid
                    FROM (SELECT u.uid, p.post_key, p.owner_uid AS poster_uid
                          FROM users u JOIN posts p ON p.owner_uid = u.uid
                          WHERE \(readers) AND \(missing)
                          UNION ALL
                          SELECT u.uid, p.post_key, p.owner_uid
                          FROM users u JOIN following f ON f.uid = u.uid
                              JOIN \(followeePosts)
                          WHERE \(readers) AND \(missing)
                          UNION ALL
                          SELECT u.uid, p.post_key, p.owner_uid
                          FROM users u
                              JOIN (SELECT DISTINCT v.path[1] AS uid, v.path[2] AS followee_uid FROM unmapped_values v
                                    WHERE \(Self.unmappedChildren(of: "following"))) f ON f.uid = u.uid
                              JOIN \(followeePosts)
                          WHERE \(readers) AND \(missing)) e
                    ORDER BY uid, post_key, poster_uid
                    """),
        ]
    }

    private static func chatHashSteps(_ range: KeyRange) -> [Step] {
        [
            Step(
                table: "chats", action: .updated,
                query: """
                    UPDATE chats c
                    SET member_hash = m.stable_hash, extra = extra_without(c.extra, 'memberHash')
                    FROM (SELECT chat_key, chat_member_hash(members[1], members[2]) AS stable_hash
                          FROM chat_members
                          WHERE cardinality(members) = 2 AND key_in_range(chat_key, \(range.from), \(range.to))) m
                    WHERE c.chat_key = m.chat_key
                        AND (c.member_hash IS DISTINCT FROM m.stable_hash
                             OR extra_without(c.extra, 'memberHash') IS DISTINCT FROM c.extra)
                    """)
        ]
    }

    /// One side of the follow graph: `/table/{a}/{b}` (the node and its table have one name), typed as (`a`, `b`)
    /// unless kept unmapped.
    private struct FollowSide {
        var table: String
        var a: String
        var b: String
        /// The follower's column (the repair's batches are ranges of followers), and its place in the path of an
        /// unmapped value aliased `v`.
        var follower: String
        var followerInPath: Query

        static let following = FollowSide(
            table: "following", a: "uid", b: "followee_uid", follower: "uid", followerInPath: "v.path[1]")
        static let followers = FollowSide(
            table: "followers", a: "uid", b: "follower_uid", follower: "follower_uid", followerInPath: "v.path[2]")
    }

    /// The follow repair for the edges whose follower's uid is in `range`. Each side is asked as its table and
    /// its unmapped values apart, rather than as its tree_* view: each gets an anti-join of its own (the view's
    /// UNION ALL got a far slower plan on one server, and Citus cannot correlate a subquery with it).
    private static func followSteps(preferring preference: FollowPreference, _ range: KeyRange) -> [Step] {
        switch preference {
        case .union:
            return addMirrors(to: .followers, of: .following, range) + addMirrors(to: .following, of: .followers, range)
        case .following:
            return removeUnmirrored(from: .followers, keeping: .following, range)
                + addMirrors(to: .followers, of: .following, range)
        case .followers:
            return removeUnmirrored(from: .following, keeping: .followers, range)
                + addMirrors(to: .following, of: .followers, range)
        }
    }

    /// Adds to `side` the mirror of every edge of `other` (typed or unmapped) whose follower is in `range`,
    /// unless the mirror is there, typed or unmapped. A MERGE on the mirror's own key: Citus sends the source's
    /// rows to the shards of `side` (repartitioning), where an INSERT … SELECT … NOT EXISTS would join two tables
    /// distributed by different columns; one server hash-joins as before. The typed edges and the unmapped ones
    /// are two MERGEs: with both in one source (a UNION ALL beside the reference table) Citus pulled every edge to
    /// the coordinator rather than repartition them on the workers (20,000 users, `repair follows` at 4 shards
    /// 1.6-1.8 s -> 0.4-0.5 s; at 32 shards, where repartitioning makes a fragment per pair of shards, no gain).
    private static func addMirrors(to side: FollowSide, of other: FollowSide, _ range: KeyRange) -> [Step] {
        func merge(_ source: Query) -> Step {
            Step(
                table: side.table, action: .inserted,
                query: """
                    MERGE INTO \(identifier: side.table) t
                    USING (\(source)) s
                    ON t.\(identifier: side.a) = s.a AND t.\(identifier: side.b) = s.b
                    WHEN NOT MATCHED THEN INSERT (\(identifier: side.a), \(identifier: side.b)) VALUES (s.a, s.b)
                    """)
        }
        return [
            merge(
                """
                SELECT o.\(identifier: other.b) AS a, o.\(identifier: other.a) AS b FROM \(identifier: other.table) o
                WHERE key_in_range(o.\(identifier: other.follower), \(range.from), \(range.to))
                    AND NOT EXISTS (
                        SELECT 1 FROM unmapped_values w
                        WHERE w.root = \(side.table) AND w.path[1] = o.\(identifier: other.b)
                            AND w.path[2] = o.\(identifier: other.a))
                """),
            merge(
                """
                SELECT DISTINCT v.path[2] AS a, v.path[1] AS b FROM unmapped_values v
                WHERE \(Self.unmappedChildren(of: other.table))
                    AND key_in_range(\(other.followerInPath), \(range.from), \(range.to))
                    AND NOT EXISTS (
                        SELECT 1 FROM unmapped_values w
                        WHERE w.root = \(side.table) AND w.path[1] = v.path[2] AND w.path[2] = v.path[1])
                """),
        ]
    }

    /// Removes the edges of `side` (typed and unmapped) whose `/side/{a}/{b}` has no mirror in `kept`, for the
    /// followers in `range`. The typed mirrors are read through an OFFSET 0 subquery, which Citus ships to the workers.
    private static func removeUnmirrored(
        from side: FollowSide, keeping kept: FollowSide, _ range: KeyRange
    ) -> [Step] {
        let keptPairs = rows(of: [kept.a, kept.b], in: kept.table)
        return [
            Step(
                table: side.table, action: .deleted,
                query: """
                    DELETE FROM \(identifier: side.table) t
                    WHERE key_in_range(t.\(identifier: side.follower), \(range.from), \(range.to))
                        AND NOT EXISTS (
                            SELECT 1 FROM \(keptPairs) k
                            WHERE k.\(identifier: kept.a) = t.\(identifier: side.b)
                                AND k.\(identifier: kept.b) = t.\(identifier: side.a))
                        AND NOT EXISTS (
                            SELECT 1 FROM unmapped_values w
                            WHERE \(Self.unmappedChildren(of: kept.table, as: "w"))
                                AND w.path[1] = t.\(identifier: side.b) AND w.path[2] = t.\(identifier: side.a))
                    """),
            Step(
                table: "unmapped_values", action: .deleted,
                query: """
                    DELETE FROM unmapped_values v
                    WHERE \(Self.unmappedChildren(of: side.table))
                        AND key_in_range(\(side.followerInPath), \(range.from), \(range.to))
                        AND NOT EXISTS (
                            SELECT 1 FROM \(keptPairs) k
                            WHERE k.\(identifier: kept.a) = v.path[2] AND k.\(identifier: kept.b) = v.path[1])
                        AND NOT EXISTS (
                            SELECT 1 FROM unmapped_values w
                            WHERE \(Self.unmappedChildren(of: kept.table, as: "w"))
                                AND w.path[1] = v.path[2] AND w.path[2] = v.path[1])
                    """),
        ]
    }

    /// The fields a chat's copies share; a stale copy of one in `extra` would win over the typed column on export.
    private static let chatFields: Query = "'{title,memberHash,members,lastMessage,lastMessageSent}'::text[]"

    /// The chat repair for the chats whose key is in `range`.
    private static func chatSteps(_ range: KeyRange) -> [Step] {
        [
            // What every copy of each chat should say: the members (the union of the copies' members, or the
            // holders when no copy names any), the other fields from the most recently updated copy, and the
            // last message from the newest message when the chat has messages. Only the chats where some copy says
            // otherwise, or is missing or held by a non-member, are kept, so the statements below touch only them.
            // Those are found by a join and a UNION rather than a correlated EXISTS, which Citus cannot run over
            // the aggregate; the new copies by an outer join with the temporary table, which Citus turns into a
            // subquery it ships, where a NOT EXISTS from a local table into a distributed one is refused.
            Step(
                unreported: """
                    CREATE TEMPORARY TABLE repair_chats ON COMMIT DROP AS
                    WITH d AS MATERIALIZED (
                        SELECT m.chat_key, m.holders,
                            CASE WHEN cardinality(m.members) > 0 THEN m.members ELSE m.holders END AS members,
                            s.title, s.member_hash,
                            CASE WHEN n.chat_key IS NULL THEN s.last_message ELSE n.sender_username || ': ' || n.content END
                                AS last_message,
                            CASE WHEN n.chat_key IS NULL THEN s.last_message_sent ELSE n."timestamp" END AS last_message_sent,
                            nullif(s.extra - \(Self.chatFields), '{}') AS extra
                        FROM chat_members m
                        JOIN (SELECT DISTINCT ON (chat_key) * FROM chats
                              ORDER BY chat_key, last_message_sent DESC NULLS LAST, uid) s USING (chat_key)
                        LEFT JOIN chat_newest_messages n USING (chat_key)
                        WHERE key_in_range(m.chat_key, \(range.from), \(range.to)))
                    SELECT * FROM d WHERE d.holders IS DISTINCT FROM d.members
                    UNION
                    SELECT d.* FROM d JOIN chats c ON c.chat_key = d.chat_key
                    WHERE c.title IS DISTINCT FROM d.title OR c.member_hash IS DISTINCT FROM d.member_hash
                        OR c.members IS DISTINCT FROM d.members OR c.last_message IS DISTINCT FROM d.last_message
                        OR c.last_message_sent IS DISTINCT FROM d.last_message_sent
                        OR c.extra ?| \(Self.chatFields)
                    """),
            Step(
                table: "chats", action: .deleted,
                query: """
                    DELETE FROM chats c USING repair_chats d
                    WHERE c.chat_key = d.chat_key AND c.uid <> ALL (d.members)
                    """),
            Step(
                table: "chats", action: .updated,
                query: """
                    UPDATE chats c
                    SET title = d.title, member_hash = d.member_hash, members = d.members, last_message = d.last_message,
                        last_message_sent = d.last_message_sent, extra = nullif(c.extra - \(Self.chatFields), '{}')
                    FROM repair_chats d
                    WHERE c.chat_key = d.chat_key
                        AND (c.title IS DISTINCT FROM d.title OR c.member_hash IS DISTINCT FROM d.member_hash
                             OR c.members IS DISTINCT FROM d.members OR c.last_message IS DISTINCT FROM d.last_message
                             OR c.last_message_sent IS DISTINCT FROM d.last_message_sent
                             OR c.extra ?| \(Self.chatFields))
                    """),
            Step(
                table: "chats", action: .inserted,
                query: """
                    INSERT INTO chats (uid, chat_key, title, member_hash, members, last_message, last_message_sent, extra)
                    SELECT w.uid, w.chat_key, w.title, w.member_hash, w.members, w.last_message, w.last_message_sent, w.extra
                    FROM (SELECT u.uid, d.* FROM repair_chats d CROSS JOIN LATERAL unnest(d.members) AS u(uid)) w
                    LEFT JOIN chats c ON c.uid = w.uid AND c.chat_key = w.chat_key
                    WHERE c.uid IS NULL
                    """),
        ]
            // The repaired chats' holders, as their copies now are.
            + DerivedCopies.chatHoldersSettled(keysIn: "repair_chats").map(Step.init(unreported:))
            + [Step(unreported: "DROP TABLE repair_chats")]
    }

    /// The orphan repair's statements, each with the table whose batch key divides it (nil: never batched) and its
    /// statement for the rows whose key is in a range.
    static var orphanStatements: [(key: TreeTable?, step: (KeyRange) -> Step)] {
        [
            (
                .posts,
                { range in
                    Step(
                        table: "post_likes", action: .deleted,
                        query: """
                            DELETE FROM post_likes l
                            WHERE l.post_owner_uid = '' AND key_in_range(l.post_key, \(range.from), \(range.to))
                            """)
                }
            ),
            (
                .chats,
                { range in
                    Step(
                        table: "messages", action: .deleted,
                        query: """
                            DELETE FROM messages m
                            WHERE key_in_range(m.chat_key, \(range.from), \(range.to))
                                AND NOT EXISTS (SELECT 1 FROM chat_holders c WHERE c.chat_key = m.chat_key)
                            """)
                }
            ),
            (
                .users,
                { range in
                    Step(
                        table: "timeline", action: .deleted,
                        query: """
                            DELETE FROM timeline t
                            WHERE key_in_range(t.uid, \(range.from), \(range.to))
                                AND NOT EXISTS (SELECT 1 FROM \(Self.rows(of: ["post_key"], in: "posts")) p WHERE p.post_key = t.post_key)
                            """)
                }
            ),
            (
                nil,
                { _ in
                    Step(
                        table: "unmapped_values", action: .deleted,
                        query: """
                            DELETE FROM unmapped_values v
                            WHERE ((\(Self.unmappedChildren(of: "postLikes")) AND NOT EXISTS (
                                        SELECT 1 FROM \(Self.rows(of: ["post_key"], in: "posts")) p WHERE p.post_key = v.path[1]))
                                OR (\(Self.unmappedChildren(of: "timeline")) AND NOT EXISTS (
                                        SELECT 1 FROM \(Self.rows(of: ["post_key"], in: "posts")) p WHERE p.post_key = v.path[2])))
                            """)
                }
            ),
        ]
    }

    private static func orphanSteps(_ range: KeyRange) -> [Step] {
        orphanStatements.map { $0.step(range) }
    }

    /// Deletes the leaves the hidden_values check lists (migration 0016): unmapped values first, then the typed
    /// leaves (likes, follows) that still have something below them. A node's path names it alone, keys holding
    /// no "/".
    private static let hiddenValueSteps: [Step] =
        [
            Step(
                table: "unmapped_values", action: .deleted,
                query: """
                    DELETE FROM unmapped_values
                    WHERE tree_path(root, path) IN (SELECT path FROM integrity_hidden_values)
                    """)
        ]
        + TreeTable.allCases.filter(\.isLeaf).map { table in
            Step(
                table: table.name, action: .deleted,
                query: """
                    DELETE FROM \(identifier: table.name)
                    WHERE tree_path(\(table.rootKey), ARRAY[\(Query.identifiers(table.keyColumns))])
                        IN (SELECT path FROM integrity_hidden_values)
                    """)
        }
}
