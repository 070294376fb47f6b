import FirebaseTree
import Foundation

/// The load pipeline: the one way tree rows reach the tables. A `TreeImporter` walks the source and emits rows
/// into a `TableLoader` and findings here; what a finding does to the rows already stored is decided here (the
/// walker runs no SQL); the `/posts/{id}` nodes found misshapen are stored again once the reading is done.
///
/// Every writer of tree rows drives one: a whole-tree import (its session, and each helper session), the likes a
/// whole-tree import reads after the posts, an import at a path or a merge (and so the write verbs and the
/// mirror's events, which are such imports), and a sync's plan. What the write does to the kept copies is
/// settled after it by `KeptCopies.settle`.
final class TreeLoad {
    /// Where the likes the source holds go.
    enum Likes {
        /// Staged until the posts are in (`DerivedCopies.storeStagedLikes` gives each its owners): in an export
        /// /postLikes comes before /posts.
        case staged
        /// Sent with their owners, read from the posts loaded before.
        case withOwners(PostOwners)
        /// Into `post_likes` as the other rows go: the source holds none (a session that defers them), or
        /// nothing is sent.
        case direct
    }

    /// What a finding (a merge's replaced child, a repeated key) does to the rows stored at its path.
    enum Findings {
        /// They go: the rows sent so far are flushed, the deferred `indexes` a DELETE may need built (`onStep`
        /// hears the builds, and `clock`'s step ends after the deletion), then whatever is stored at or below the
        /// path goes, staged likes included. `onDeleting` hears the path first.
        case deleteRows(
            indexes: DeferredIndexes?, clock: FinishingClock? = nil, onStep: (ImportStep) -> Void = { _ in },
            onDeleting: ([String]) -> Void = { _ in })
        /// None is met: the caller deleted each node the source names, which names each once (a sync's plan).
        case neverMet
        /// Nothing is stored: the source is only read (a validation, a check of likes after a failure).
        case ignored
    }

    /// The session a load writes on, with what its findings and reshapes read and delete through.
    struct Target {
        let connection: StoreConnection
        let treeRows: TreeRows
        let copies: DerivedCopies
        let export: TreeExport
    }

    /// The rows' way into the tables.
    let loader: TableLoader
    /// The walk of the source.
    let importer: TreeImporter
    private let target: Target?
    private let findings: Findings
    private let reshape: PostsReshape?
    private let onReject: (ImportReject) throws -> Void

    /// A load of `source` (read as the node at `options.at`) on `target`; nil: nothing is sent. `freezing`: COPY
    /// FREEZE, into tables the import created in its transaction.
    convenience init(
        _ source: some ByteSource, options: ImportOptions, on target: Target?, freezing: Bool = false,
        likes: Likes = .staged, findings: Findings, onReject: @escaping (ImportReject) throws -> Void
    ) {
        let loader = Self.loader(on: target, freezing: freezing, likes: likes)
        self.init(
            loader: loader,
            importer: TreeImporter(
                source: source, loader: loader, options: options, onFinding: { _ in [:] }, onReject: onReject),
            target: target, findings: findings, onReject: onReject)
    }

    /// A load of the nodes under `key` that an importer of the same whole-tree `file` deferred (`TreeImporter`'s
    /// `init(resuming:…)`), into tables the import created (COPY FREEZE).
    convenience init(
        resuming nodes: DeferredNodes, under key: String, of file: some ByteSource, options: ImportOptions,
        on target: Target?, likes: Likes, findings: Findings, onReject: @escaping (ImportReject) throws -> Void
    ) throws {
        let loader = Self.loader(on: target, freezing: target != nil, likes: likes)
        let importer = try TreeImporter(
            resuming: nodes, under: key, of: file, loader: loader, options: options, onFinding: { _ in [:] },
            onReject: onReject)
        if case .withOwners(let owners) = likes { importer.likeOwners = owners }
        self.init(loader: loader, importer: importer, target: target, findings: findings, onReject: onReject)
    }

    private init(
        loader: TableLoader, importer: TreeImporter, target: Target?, findings: Findings,
        onReject: @escaping (ImportReject) throws -> Void
    ) {
        self.loader = loader
        self.importer = importer
        self.target = target
        self.findings = findings
        self.onReject = onReject
        reshape = target.map { PostsReshape(export: $0.export, treeRows: $0.treeRows) }
        // The load outlives its importer's reading: the importer is its own.
        importer.onFinding = { [unowned self] in try handle($0) }
    }

    /// The loader a load sends through: staged likes go to their own table, created on the first.
    private static func loader(on target: Target?, freezing: Bool, likes: Likes) -> TableLoader {
        switch likes {
        case .staged:
            TableLoader(
                connection: target?.connection, usesFreeze: freezing,
                destinations: [
                    .postLikes: .init(
                        table: DerivedCopies.stagedLikesTable, create: { try target?.copies.stageLikes() })
                ])
        case .withOwners:
            TableLoader(
                connection: target?.connection, usesFreeze: freezing,
                leadingColumns: [.postLikes: DerivedCopies.likeOwnerColumn])
        case .direct:
            TableLoader(connection: target?.connection, usesFreeze: freezing)
        }
    }

    /// Whether likes went to the staging table, to be given their owners (`DerivedCopies.storeStagedLikes`).
    var stagedLikes: Bool { loader.redirected.contains(.postLikes) }

    /// Tells `observer` the rows as they go and asks it whether to stop.
    @discardableResult
    func observed(by observer: ImportObserver) -> TreeLoad {
        loader.onRows = observer.onRows
        loader.isCancelled = observer.isCancelled
        return self
    }

    /// Walks the source into the tables and stores again the posts it found misshapen (`walk`, then
    /// `storeReshaped`); its report.
    func run() throws -> ImportReport {
        try walk()
        try storeReshaped()
        return importer.report
    }

    /// Walks the source into the tables and sends what the loader still holds; after a failure its open COPY
    /// ends, storing nothing.
    func walk() throws {
        try importer.load()
    }

    /// Stores again the posts the walk found misshapen, whole and in their shape (`PostsReshape`), and counts
    /// their rows in the report in place of those they replace.
    func storeReshaped() throws {
        guard let reshape, !reshape.nodes.isEmpty else { return }
        let (deleted, stored) = try reshape.reshape(loader: loader, deleteRows: deleteRows, onReject: onReject)
        importer.report.replaceRows(
            deleted, with: stored, node: TreeImporter.reportedNode(TreeTable.feedPosts.rootKey ?? ""))
    }

    /// What a finding does: a misshapen post is noted for `run` to store again; otherwise as `findings` says.
    private func handle(_ finding: ImportFinding) throws -> [TreeTable: Int] {
        if reshape?.note(finding) == true { return [:] }
        switch findings {
        case .ignored:
            return [:]
        case .neverMet:
            // A repeat in a plan is a bug, and deleting would lose rows the caller wrote.
            preconditionFailure("a load that names each node once met /\(finding.path.joined(separator: "/")) again")
        case .deleteRows(_, let clock, _, let onDeleting):
            onDeleting(finding.path)
            defer { clock?.end() }
            return try deleteRows(under: finding.path)
        }
    }

    /// The rows sent so far go into the tables, the deferred indexes a DELETE may need are built, then whatever
    /// is stored at or below `path` goes, staged likes included; how many rows of each table went.
    private func deleteRows(under path: [String]) throws -> [TreeTable: Int] {
        guard let target else { return [:] }
        try loader.flush()
        if case .deleteRows(let indexes, _, let onStep, _) = findings { try indexes?.build(onStep: onStep) }
        var deleted = try target.treeRows.deleteRows(under: path)
        if stagedLikes {
            deleted[.postLikes, default: 0] += try target.copies.deleteStagedLikes(under: path)
        }
        return deleted
    }
}
