import FirebaseTree

/// Which of a file's top-level nodes an importer reads where they stand, decided outside its walk: in a parallel
/// import only those its session owns (`NodeShares`); the likes later, after the posts that give them their owners
/// (`deferredKey`, `LikesAfterPosts`); and, for an importer resuming deferred nodes, only those, stopping after the
/// last. The importer asks at each top-level key (`admit`).
struct TopLevelNodes {
    /// In a parallel import: the file's top-level nodes shared out among the sessions, and this session's number.
    var shares: (nodes: NodeShares, worker: Int)?
    /// Top-level nodes under this key that this importer imports are not read where they stand but after the rest
    /// of the file, by an importer `resuming` at them (`deferred`).
    var deferredKey: String?
    /// The nodes under `deferredKey` this importer skipped: the first one's index and where its value starts, and
    /// the last one's index.
    private(set) var deferred: DeferredNodes?
    /// The nodes the report names (`TreeImporter.reportedNode`), in the order the file first has them (not kept
    /// when reading deferred nodes): a handful, however many top-level nodes the file holds.
    private(set) var reportedNodes: [String] = []
    /// Reading deferred nodes: the index of the last one; the importer stops after it.
    private var lastDeferredNode: Int?
    /// Whether the importer stopped after the last deferred node, short of the end of the file.
    private(set) var isStoppedEarly = false
    /// The top-level node being read: its index in the file, and whether this importer imports it.
    private(set) var current = (index: -1, isOwned: true)

    /// What an importer does with a top-level node.
    enum Admission {
        /// Reads it.
        case read
        /// Skips it: another session imports it, or this importer later.
        case skip
        /// Stops: the deferred nodes it resumed at are read.
        case stop
    }

    /// Every node read where it stands.
    init() {}

    /// Only the deferred `nodes` under `key`, the first one next.
    init(resuming nodes: DeferredNodes, under key: String) {
        deferredKey = key
        current.index = nodes.first - 1
        lastDeferredNode = nodes.last
    }

    /// Admits the next top-level node, under `key`; `position` is where its value starts.
    mutating func admit(_ key: UnsafeBufferPointer<UInt8>, position: () -> JSONReader.Position) -> Admission {
        current.index += 1
        let isDeferred = deferredKey.map { FirebaseKey.same($0, key) } ?? false
        if let lastDeferredNode {
            guard current.index <= lastDeferredNode else {
                isStoppedEarly = true
                return .stop
            }
            current.isOwned = isDeferred
            return isDeferred ? .read : .skip
        }
        let text = String(decoding: key, as: UTF8.self)
        let reported = TreeImporter.reportedNode(text)
        if !reportedNodes.contains(reported) { reportedNodes.append(reported) }
        current.isOwned = shares.map { $0.nodes.claim(current.index, key: text, by: $0.worker) } ?? true
        // Every occurrence (a repeated key's too): the importer reading them replaces one by the next.
        if current.isOwned, isDeferred {
            deferred = DeferredNodes(
                first: deferred?.first ?? current.index, last: current.index, start: deferred?.start ?? position())
            current.isOwned = false
        }
        return current.isOwned ? .read : .skip
    }
}

/// Top-level nodes an importer skipped to read after the rest of the file (`TopLevelNodes.deferredKey`).
struct DeferredNodes {
    /// The first one's index among the file's top-level nodes.
    var first: Int
    /// The last one's index.
    var last: Int
    /// Where the first one's value starts.
    var start: JSONReader.Position
}
