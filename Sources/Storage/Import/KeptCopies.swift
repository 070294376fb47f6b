import FirebaseTree

/// What a write does to the copies the store keeps of who holds which post and chat (the lookups `post_keys` and
/// `chat_holders`, and each like's owners): the records it may touch are noted with their holders before it
/// writes, and settled once it has. Every writer of tree rows settles through it (import, merge and the write
/// verbs, a sync, the mirror), by `settle`.
struct KeptCopies {
    private let copies: DerivedCopies
    private let touched: TouchedKeys
    /// The holdings of the records `touched` names, read before the write.
    private let before: [String: Set<DerivedCopies.Holding>]
    /// Whether the write filled empty tables (a whole-tree import), whose lookups are filled afresh.
    private let fillsEmptyTables: Bool

    /// Before a write of the paths `touched` noted: reads who holds the records they name.
    init(copies: DerivedCopies, touching touched: TouchedKeys) throws {
        self.init(copies: copies, touched: touched, before: try touched.holdings(copies: copies), fills: false)
    }

    private init(
        copies: DerivedCopies, touched: TouchedKeys, before: [String: Set<DerivedCopies.Holding>], fills: Bool
    ) {
        (self.copies, self.touched, self.before, fillsEmptyTables) = (copies, touched, before, fills)
    }

    /// Before a whole-tree import into empty tables: every lookup is filled from every record, and staging
    /// gives each like its owners.
    static func emptyTables(copies: DerivedCopies) -> KeptCopies {
        var touched = TouchedKeys()
        touched.note([])
        return KeptCopies(copies: copies, touched: touched, before: [:], fills: true)
    }

    /// With every record under the top-level nodes `keys` touched too: a merge at the root replaced them whole
    /// (their holdings need no reading before: every key of theirs is settled).
    func touchingRoots(_ keys: some Sequence<String>) -> KeptCopies {
        var touched = touched
        for key in keys { touched.note([key]) }
        return KeptCopies(copies: copies, touched: touched, before: before, fills: fillsEmptyTables)
    }

    /// Once the write is done: the likes it staged are stored with their owners, then for the posts and chat
    /// copies it touched the lookup rows of the keys whose holders changed are settled (every key's when it
    /// touched a root; a record rewritten in place keeps its own) and, for posts, those keys' likes' owners.
    /// The lookups `skipping` names are left as they are (a parallel import's sessions fill those of what they
    /// loaded themselves); `isDistributed` is asked when not known.
    func settle(
        stagedLikes: Bool, skipping: Set<String> = [], isDistributed: Bool?,
        onStep: (ImportStep) -> Void = { _ in }
    ) throws {
        let touchesPosts = touched.scope(of: .posts) != .none
        let distributed =
            try isDistributed
            ?? (stagedLikes || (touchesPosts && !fillsEmptyTables)
                ? Distribution.isDistributed(on: copies.connection) : false)
        if stagedLikes {
            onStep(.storingLikes)
            try copies.storeStagedLikes(isDistributed: distributed)
        }
        for records in HeldRecords.all where !skipping.contains(records.lookup) {
            if fillsEmptyTables {
                onStep(.fillingLookup(table: records.lookup))
                try copies.fillLookup(of: records, isDistributed: distributed)
                continue
            }
            let keys = try touched.changedKeys(of: records, before: before, copies: copies)
            if keys?.isEmpty == true { continue }
            onStep(.fillingLookup(table: records.lookup))
            try copies.settleLookup(of: records, ofKeys: keys)
            if records == .posts {
                onStep(.settlingLikes)
                try copies.settleLikeOwners(ofKeys: keys, isDistributed: distributed)
            }
        }
    }
}
