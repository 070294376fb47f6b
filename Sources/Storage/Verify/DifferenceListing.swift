import FirebaseTree

/// The differences a verify or sync report lists, and how many lie under each child of the compared node, in
/// memory that does not grow with what the comparison finds: at most `limit` listed, their values cut to a
/// kilobyte once the listed ones hold `fullValueBytes`, none listed past `maximumBytes` (however large
/// `--max-differences` is), and at most `countedChildren` children counted by name (the rest together).
struct DifferenceListing {
    /// Bytes of values the listed differences keep whole (each up to the comparison's own cut, a megabyte).
    static let fullValueBytes = 16 << 20
    /// Bytes of a value kept past `fullValueBytes`.
    static let cutValueBytes = 1 << 10
    /// Bytes the listed differences hold at most, their paths and keeping included.
    static let maximumBytes = 48 << 20
    /// Children whose differences are counted by name.
    static let countedChildren = 1000

    private let limit: Int
    /// The listed differences, in RTDB order of path.
    private(set) var differences: [TreeDifference] = []
    /// Whether differences went unlisted because the list reached `maximumBytes` (not `limit`).
    private(set) var isCutForMemory = false
    private var bytes = 0
    /// Differences under each counted child, by its path from the root.
    private(set) var countsByChild: [[String]: Int] = [:]
    /// Differences under the children not counted by name, and how many such children there are.
    private(set) var otherChildren = (differences: 0, children: 0)
    private var lastOtherChild: [String]?

    /// A listing of at most `limit` differences.
    init(limit: Int) { self.limit = limit }

    /// Counts `difference` under `child` (the compared node's child it lies under) and lists it if there is room.
    mutating func add(_ difference: TreeDifference, under child: [String]) {
        if countsByChild[child] != nil || countsByChild.count < Self.countedChildren {
            countsByChild[child, default: 0] += 1
        } else {
            // Differences come in RTDB order of path: a child's are together.
            otherChildren.differences += 1
            if lastOtherChild.map({ !FirebaseKey.samePath($0, child) }) ?? true {
                otherChildren.children += 1
                lastOtherChild = child
            }
        }
        guard differences.count < limit, !isCutForMemory else { return }
        var listed = difference
        if bytes >= Self.fullValueBytes {
            listed.source = listed.source.map { FirebaseKey.shortened($0, toBytes: Self.cutValueBytes) }
            listed.store = listed.store.map { FirebaseKey.shortened($0, toBytes: Self.cutValueBytes) }
            if listed.source != difference.source || listed.store != difference.store { listed.isCut = true }
        }
        let size =
            64 + listed.path.reduce(0) { $0 + $1.utf8.count + 16 } + (listed.source?.utf8.count ?? 0)
            + (listed.store?.utf8.count ?? 0) + (listed.reason?.utf8.count ?? 0)
        guard bytes + size <= Self.maximumBytes else {
            isCutForMemory = true
            return
        }
        bytes += size
        differences.append(listed)
    }
}
