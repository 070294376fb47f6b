/// One of the checks of the app's hand-kept copies. The names are a contract with scripts (`check --only`,
/// `--format json`); each check is the view `integrity_<name>` of migration 0003, one row per violation.
public enum IntegrityCheck: String, CaseIterable, Sendable {
    /// Posts whose `like_count` is missing or differs from the number of children of `/postLikes/{key}`.
    case likeCount = "like_count"
    /// Posts whose `poster` is missing, names another uid, or has a username other than the owner's.
    case poster
    /// Posts of a user or of a followee that are not in the user's timeline.
    case timelineMissing = "timeline_missing"
    /// Timeline entries of an existing post that do not belong there, or name the wrong poster.
    case timelineExtra = "timeline_extra"
    /// Follows present in only one of `/following` and `/followers`.
    case followAsymmetric = "follow_asymmetric"
    /// Chats whose copies are not held by exactly their members, or differ in title, members or last message.
    case chatCopies = "chat_copies"
    /// Chats whose copies carry different `memberHash` values.
    case chatMemberHash = "chat_member_hash"
    /// Two-person chats whose `memberHash` is not the stable member hash.
    case chatHashLegacy = "chat_hash_legacy"
    /// Pairs of users with more than one two-person chat.
    case chatDuplicates = "chat_duplicates"
    /// Chats whose copies' `lastMessage`/`lastMessageSent` do not describe the newest message.
    case chatLastMessage = "chat_last_message"
    /// Likes of missing posts, messages of missing chats, timeline entries of missing posts.
    case orphans
    /// Leaves with something stored below them: values a write below them replaced in Firebase, which earlier
    /// versions kept hidden (migration 0016).
    case hiddenValues = "hidden_values"
    /// Children of /posts stored otherwise than their children say (an AppCoda feed post when some child is a
    /// leaf or an AppCoda field, an owner's posts otherwise), as earlier versions stored some by the order of
    /// their file (migration 0023).
    case postsShape = "posts_shape"
    /// Profiles under /users that no Firebase Auth account owns, once accounts are imported (migration 0024).
    case accountMissing = "account_missing"
    /// Firebase Auth accounts with no profile under /users.
    case profileMissing = "profile_missing"

    /// The view that lists the violations.
    var viewName: String { "integrity_" + rawValue }

    /// The view that lists the violations on a store so placed: the timeline checks and orphans have twins that
    /// Citus can plan (migrations 0012 and 0014), which one server would run without its parallel plans.
    func viewName(isDistributed: Bool) -> String {
        isDistributed && Self.twinned.contains(self) ? viewName + "_distributed" : viewName
    }

    private static let twinned: Set<IntegrityCheck> = [.timelineMissing, .timelineExtra, .orphans]

    /// One line on what a violation is, for `check` and `help`.
    public var summary: String {
        switch self {
        case .likeCount: "posts whose like_count is missing or differs from their likes"
        case .poster: "posts whose poster copy is missing or disagrees with /users"
        case .timelineMissing: "posts of a user or a followee missing from the user's timeline"
        case .timelineExtra: "timeline entries that do not belong there or name the wrong poster"
        case .followAsymmetric: "follows present in only one of /following and /followers"
        case .chatCopies: "chats whose copies disagree, or are not held by exactly their members"
        case .chatMemberHash: "chats whose copies carry different memberHash values"
        case .chatHashLegacy: "two-person chats whose memberHash is not the stable member hash"
        case .chatDuplicates: "pairs of users with more than one two-person chat"
        case .chatLastMessage: "chats whose lastMessage or lastMessageSent is not their newest message"
        case .orphans: "likes, messages and timeline entries of posts or chats that do not exist"
        case .hiddenValues: "leaves with something stored below them: values a later write replaced"
        case .postsShape: "children of /posts stored as a feed post or as an owner's posts against their children"
        case .accountMissing: "profiles under /users that no imported Auth account owns"
        case .profileMissing: "imported Auth accounts with no profile under /users"
        }
    }

    /// The repair that makes the check pass, if one can be chosen without an operator.
    public var repair: Repair? {
        switch self {
        case .likeCount: .likeCounts
        case .poster: .posters
        case .timelineMissing, .timelineExtra: .timelines
        case .followAsymmetric: .follows
        case .chatCopies, .chatMemberHash, .chatLastMessage: .chats
        case .chatHashLegacy: .chatHashes
        case .orphans: .orphans
        case .hiddenValues: .hiddenValues
        case .postsShape: .postsShape
        // Which of two duplicate chats to keep is an operator's decision (`chat merge`); whether an account or a
        // profile is the one missing, too.
        case .chatDuplicates, .accountMissing, .profileMissing: nil
        }
    }
}

/// What one check found.
public struct CheckResult: Sendable, Equatable {
    /// The check.
    public var check: IntegrityCheck
    /// How many violations there are.
    public var violations: Int
    /// The Firebase paths of the first violations, in byte order.
    public var examples: [String]
    /// How long the check took.
    public var seconds: Double = 0

    /// Whether nothing is wrong.
    public var isClean: Bool { violations == 0 }

    /// The same findings (check, count, examples); how long the check took is not a finding.
    public static func == (a: CheckResult, b: CheckResult) -> Bool {
        a.check == b.check && a.violations == b.violations && a.examples == b.examples
    }
}
