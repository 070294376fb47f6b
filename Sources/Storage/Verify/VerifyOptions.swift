import FirebaseTree

/// How `verify` compares: which node, what it ignores, how much it lists, and where it sorts.
public struct VerifyOptions: Sendable {
    /// The source is the node at this path (keys from the root) rather than the whole tree.
    public var at: [String]
    /// Compare without `.priority` values on either side.
    public var ignoringPriorities: Bool
    /// How many differences the report lists (in RTDB order of path); all are counted.
    public var maxListed: Int
    /// Sort the source before comparing, without trying one pass (for an export known to be out of order).
    public var sortingFirst: Bool
    /// Where a sorted source, or a source that can be read only once, is kept.
    public var temporaryDirectory: String
    /// The top-level nodes compared (`--only`, `--exclude`), the others skipped on both sides; nil: all. Only for
    /// a comparison of the whole tree.
    public var topLevel: TopLevelSelection?

    /// Options; the defaults compare the whole tree, priorities included, listing the first 1,000 differences.
    public init(
        at: [String] = [], ignoringPriorities: Bool = false, maxListed: Int = 1000, sortingFirst: Bool = false,
        temporaryDirectory: String = TreeSorter.defaultTemporaryDirectory, topLevel: TopLevelSelection? = nil
    ) {
        self.at = at
        self.ignoringPriorities = ignoringPriorities
        self.maxListed = maxListed
        self.sortingFirst = sortingFirst
        self.temporaryDirectory = temporaryDirectory
        self.topLevel = topLevel
    }
}
