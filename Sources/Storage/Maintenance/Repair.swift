internal import PostgresClient

/// What `Store.checkAndFix` is doing.
public enum FixStep: Sendable, Equatable {
    /// Running the check at `index` (from 0) of `count`; `again` after the repairs.
    case check(IntegrityCheck, index: Int, of: Int, again: Bool)
    /// Running a repair.
    case repair(Repair)
}

/// A repair of the app's hand-kept copies: a few set-based statements in one transaction, idempotent.
public enum Repair: CaseIterable, Sendable {
    /// `like_count` = the number of likes.
    case likeCounts
    /// Every timeline = own posts and followees' posts, with the right `poster_uid`; nothing else.
    case timelines
    /// Every post's `poster` = `{uid: owner, username: current username}`.
    case posters
    /// Every two-person chat copy's `memberHash` = the stable member hash.
    case chatHashes
    /// `/following` and `/followers` mirror each other.
    case follows
    /// Every member holds a copy of each chat, the copies agree, and describe the newest message.
    case chats
    /// Likes, messages and timeline entries of posts or chats that do not exist are removed.
    case orphans
    /// Leaves with something stored below them are removed, as the write below them replaced them in Firebase.
    case hiddenValues
    /// Children of /posts stored otherwise than their children say are stored again, each from its own export.
    case postsShape
    /// Two chats of the same members become one: the messages of one move into the other, which an operator
    /// decides (`Store.mergeChats`); never part of `check --fix`.
    case chatMerge

    /// The order `check --fix` runs repairs in: removals first, so later repairs do not count what goes away
    /// (hidden values first of all: a like or a follow that a later write replaced is no like or follow), then the
    /// posts' shapes, which the repairs of posts read; chats before their hashes, since making copies agree may
    /// pick a stale hash.
    public static let fixOrder: [Repair] = [
        .hiddenValues, .postsShape, .orphans, .follows, .chats, .chatHashes, .posters, .likeCounts, .timelines,
    ]

    /// Whether the repair can run as a series of transactions over ranges of keys (`RepairOptions.batchSize`).
    public var isBatchable: Bool { self != .chatMerge && self != .hiddenValues && self != .postsShape }

    /// The table whose batch key (`TableDescription.batchKey`) the repair's batches divide (`orphans` has one
    /// per statement).
    var batchTable: TreeTable? {
        switch self {
        case .likeCounts, .posters, .timelines, .follows: .users
        case .chats, .chatHashes: .chats
        case .orphans, .hiddenValues, .postsShape, .chatMerge: nil
        }
    }
}

/// Which side wins when `/following` and `/followers` disagree.
public enum FollowPreference: String, CaseIterable, Sendable {
    /// Each side gets the edges only the other has.
    case union
    /// `/followers` becomes the mirror of `/following`.
    case following
    /// `/following` becomes the mirror of `/followers`.
    case followers
}

/// How a repair runs.
public struct RepairOptions: Sendable {
    /// Do the work, report it, then roll back.
    public var isDryRun = false
    /// Backfills only this user's timeline (nil: every user's).
    public var user: String?
    /// `repair follows --prefer`.
    public var followPreference = FollowPreference.union
    /// `--batch-size N`: the repair runs as one transaction per range of about N keys (`Repair.batchTable`), each
    /// committed before the next, instead of all in one (for stores too large to rewrite in one transaction).
    /// nil: one.
    public var batchSize: Int?
    /// `--wait`: how many seconds to wait for another check, repair or import to finish (0: fail at once).
    public var waitSeconds: Double = 0

    /// For a chat merge: the chat that stays and the one whose messages move into it.
    public var mergedChats: (keep: String, drop: String)?

    /// The defaults: change the data, every user, union of follows.
    public init(
        isDryRun: Bool = false, user: String? = nil, followPreference: FollowPreference = .union,
        mergedChats: (keep: String, drop: String)? = nil, batchSize: Int? = nil
    ) {
        self.isDryRun = isDryRun
        self.user = user
        self.followPreference = followPreference
        self.mergedChats = mergedChats
        self.batchSize = batchSize
    }
}

/// What a repair's statement did to its table's rows.
public enum RowAction: String, Sendable {
    /// Rows added.
    case inserted
    /// Rows changed in place.
    case updated
    /// Rows removed.
    case deleted
}

/// What a repair changed (or, in a dry run, would have changed).
public struct RepairReport: Sendable, Equatable {
    /// One statement's effect.
    public struct Change: Sendable, Equatable {
        /// The table.
        public var table: String
        /// What the statement did to the table's rows.
        public var action: RowAction
        /// How many rows.
        public var rows: Int
    }

    /// The repair.
    public var repair: Repair
    /// Its statements' effects, in the order they ran.
    public var changes: [Change] = []
    /// Whether it was rolled back.
    public var isDryRun = false
    /// How long it took.
    public var seconds = 0.0
    /// Each chat merged away and the chat that took its messages, in the order merged.
    public var mergedChats: [MergedChat] = []

    /// Rows changed in all tables.
    public var rowsChanged: Int { changes.reduce(0) { $0 + $1.rows } }

    /// Adds a statement's effect, to the change of the same table and action when there is one (batches).
    mutating func add(_ change: Change) {
        if let index = changes.firstIndex(where: { $0.table == change.table && $0.action == change.action }) {
            changes[index].rows += change.rows
        } else {
            changes.append(change)
        }
    }
}

/// A chat that `chat merge --all` merged into another of the same members.
public struct MergedChat: Sendable, Equatable {
    /// The chat that stays.
    public var kept: String
    /// The chat whose messages moved into `kept` and whose copies were deleted.
    public var dropped: String
    /// Both chats' members.
    public var members: [String]
    /// How many messages moved.
    public var messagesMoved: Int
}

extension TreeTable {
    /// Every `n`-th value of the table's batch key after the first, in order: where a batched repair's ranges
    /// after the first begin.
    func batchStartsQuery(every n: Int) -> Query {
        guard let key = description.batchKey else { preconditionFailure("\(name) has no batch key") }
        return """
            SELECT k FROM (SELECT k, row_number() OVER (ORDER BY k) AS n
                           FROM (SELECT DISTINCT \(identifier: key) AS k FROM \(identifier: name)) d) s
            WHERE n > 1 AND n % \(n) = 1 ORDER BY 1
            """
    }
}
