import FirebaseTree
internal import PostgresClient

/// A whole-tree import's likes, read after the rest of a file that can be read again: in an export /postLikes
/// comes before /posts, and once the posts are loaded the console knows each like's owner (`PostOwners`) and
/// sends the likes with theirs by one COPY, where staging them and joining them with the posts cost the server
/// three to four times that COPY (BENCHMARKS-LOG.md, issue 42). The importer of the rest skips them
/// (`TopLevelNodes.deferredKey`); these importers read them.
struct LikesAfterPosts {
    /// The key of the nodes read last.
    static let key = TreeTable.postLikes.rootKey ?? "postLikes"
    /// Opens the file from its start.
    let reopening: () throws -> any ByteSource
    let options: ImportOptions
    let onReject: (ImportReject) throws -> Void

    /// The load of the likes `nodes` on `target`, whose posts are loaded (at most `posts` rows): with their owners
    /// when those fit in memory (`ImportOptions.likeOwnersMemoryBudget`) and no post key has several; otherwise
    /// staged (`DerivedCopies.storeStagedLikes` then joins them with the posts). A repeated key's rows go, the
    /// deferred `indexes` built first. A whole-tree import made its tables in its transaction, so the likes go
    /// by COPY FREEZE too.
    func loading(
        _ nodes: DeferredNodes, posts: Int, on target: TreeLoad.Target, indexes: DeferredIndexes?,
        onStep: @escaping (ImportStep) -> Void
    ) throws -> TreeLoad {
        let owners = try PostOwners.read(
            on: target.connection, count: posts, budget: options.likeOwnersMemoryBudget)
        return try TreeLoad(
            resuming: nodes, under: Self.key, of: try reopening(), options: options, on: target,
            likes: owners.map { .withOwners($0) } ?? .staged, findings: .deleteRows(indexes: indexes, onStep: onStep),
            onReject: onReject)
    }

    /// A read of the likes `nodes` that loads nothing: after the import failed further on in the file, a failure
    /// of theirs, which comes first, is the one to report.
    func checking(_ nodes: DeferredNodes) throws -> TreeLoad {
        try TreeLoad(
            resuming: nodes, under: Self.key, of: try reopening(), options: options, on: nil, likes: .direct,
            findings: .ignored, onReject: onReject)
    }
}
