import FirebaseTree
import Foundation

/// How `Store.sync` runs.
public struct SyncOptions {
    /// The source is the node at this path (keys from the root) rather than the whole tree.
    public var at: [String]
    /// Compare, write and report, then roll back.
    public var isDryRun: Bool
    /// How many values import would refuse are let through (listed, never written) before the sync aborts.
    public var maximumRejects: Int
    /// Whether the sync may leave empty a store that held something (a source holding nothing).
    public var allowsEmptying: Bool
    /// How many differences the report lists (all are counted).
    public var maxListed: Int
    /// Sort the source before comparing, without trying one pass.
    public var sortingFirst: Bool
    /// Where the sorted source and the plan of what to write are kept.
    public var temporaryDirectory: String
    /// How long to queue behind a check, repair, import or sync holding the maintenance lock.
    public var wait: MaintenanceWait
    /// The top-level nodes synced (`--only`, `--exclude`); the others are left as they are. nil: all. Only for
    /// a sync of the whole tree.
    public var topLevel: TopLevelSelection?

    /// Options; the defaults sync the whole tree, abort on the first reject and fail at once when another
    /// maintenance command runs.
    public init(
        at: [String] = [], isDryRun: Bool = false, maximumRejects: Int = 0, allowsEmptying: Bool = false,
        maxListed: Int = 1000, sortingFirst: Bool = false,
        temporaryDirectory: String = TreeSorter.defaultTemporaryDirectory, wait: MaintenanceWait = .none
    ) {
        self.at = at
        self.isDryRun = isDryRun
        self.maximumRejects = maximumRejects
        self.allowsEmptying = allowsEmptying
        self.maxListed = maxListed
        self.sortingFirst = sortingFirst
        self.temporaryDirectory = temporaryDirectory
        self.wait = wait
    }
}

/// What a sync tells its caller as it goes, and asks: the rejects, the steps, and whether to stop.
public struct SyncObserver {
    /// Hears each value import refuses, which is left out; the sync aborts once more than
    /// `SyncOptions.maximumRejects` were met.
    public var onReject: (ImportReject) throws -> Void
    /// Asked between batches of writes; true stops the sync, rolled back.
    public var isCancelled: () -> Bool
    /// Hears each step: comparing, deleting, writing, settling.
    public var onStep: (SyncStep) -> Void

    /// An observer; each part defaults to hearing nothing (and never stopping).
    public init(
        onReject: @escaping (ImportReject) throws -> Void = { _ in }, isCancelled: @escaping () -> Bool = { false },
        onStep: @escaping (SyncStep) -> Void = { _ in }
    ) {
        self.onReject = onReject
        self.isCancelled = isCancelled
        self.onStep = onStep
    }
}

/// What `sync` found and wrote.
public struct SyncReport: Sendable {
    /// One top-level node's share, named as import's report names it (`users`, …, `(other nodes)`).
    public struct Node: Sendable, Equatable {
        /// The node's name.
        public var name: String
        /// Paths in the source only (the shallowest of each), in both with other values, in the store only.
        public var added = 0, changed = 0, removed = 0
        /// Values import refuses, which were left out.
        public var rejected = 0
        /// Rows stored and rows deleted (a rewritten record counts in both).
        public var rowsWritten = 0, rowsDeleted = 0

        /// A node with nothing counted yet.
        public init(name: String) { self.name = name }
    }

    /// The nodes that differed, in the order their first difference was met.
    public var nodes: [Node] = []
    /// The first differences, in RTDB order of path (as many as were asked for).
    public var differences: [TreeDifference] = []
    /// Whether fewer differences are listed than were asked for because the list reached its memory budget
    /// (48 MB; values are cut to a kilobyte past 16 MB).
    public var isListCutForMemory = false
    /// How many differences of each kind there are, listed or not.
    public var counts: [TreeDifference.Kind: Int] = [:]
    /// Nodes written whole or removed: records, leaves, and the shallowest nodes on one side only.
    public var rewrites = 0
    /// Nodes (leaves and objects) compared.
    public var nodesCompared = 0
    /// Bytes read from the source.
    public var sourceBytes = 0
    /// Sessions that read the store's side in the sync's snapshot: its own and the export's helpers.
    public var storeSessions = 1
    /// Seconds in all, comparing, and writing.
    public var seconds = 0.0, comparingSeconds = 0.0, writingSeconds = 0.0
    /// Why the source was sorted before it was compared; nil when it was read in one pass.
    public var sortedBecause: String?
    /// The first values left out because import refuses them (`rejectCount` in all).
    public var rejects: [ImportReject] = []
    /// Values left out in all.
    public var rejectCount = 0
    /// Whether it was rolled back.
    public var isDryRun = false

    /// All differences, listed or not (rejects included).
    public var differenceCount: Int { counts.values.reduce(0, +) }
    /// Rows stored in all.
    public var rowsWritten: Int { nodes.reduce(0) { $0 + $1.rowsWritten } }
    /// Rows deleted in all.
    public var rowsDeleted: Int { nodes.reduce(0) { $0 + $1.rowsDeleted } }

    /// The share of the node named `name`, added when it is not there yet.
    mutating func node(_ name: String) -> Int {
        if let index = nodes.firstIndex(where: { $0.name == name }) { return index }
        nodes.append(Node(name: name))
        return nodes.count - 1
    }
}
