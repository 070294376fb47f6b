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

    /// An importer that loads the likes `nodes` on `connection`, whose posts are loaded (at most `posts` rows):
    /// with their owners when those fit in memory (`ImportOptions.likeOwnersMemoryBudget`) and no post key has
    /// several; otherwise staged (`DerivedCopies.storeStagedLikes` then joins them with the posts). A repeated
    /// key's rows go as `TreeImport.deleteRows` says. A whole-tree import made its tables in its transaction,
    /// so the likes go by COPY FREEZE too.
    func loadingImporter(
        of nodes: DeferredNodes, posts: Int, on connection: StoreConnection,
        indexes: DeferredIndexes?, treeRows: TreeRows, copies: DerivedCopies, onStep: @escaping (ImportStep) -> Void
    ) throws -> (importer: TreeImporter, loader: TableLoader) {
        let owners = try PostOwners.read(on: connection, count: posts, budget: options.likeOwnersMemoryBudget)
        let loader =
            owners == nil
            ? TableLoader(
                connection: connection, usesFreeze: true,
                destinations: [
                    .postLikes: .init(table: DerivedCopies.stagedLikesTable, create: { try copies.stageLikes() })
                ])
            : TableLoader(
                connection: connection, usesFreeze: true,
                leadingColumns: [.postLikes: DerivedCopies.likeOwnerColumn])
        let importer = try TreeImporter(
            resuming: nodes, under: Self.key, of: try reopening(), loader: loader, options: options,
            onFinding: { finding in
                try TreeImport.deleteRows(
                    under: finding.path, loader: loader, indexes: indexes, treeRows: treeRows, copies: copies,
                    onStep: onStep)
            },
            onReject: onReject)
        importer.likeOwners = owners
        return (importer, loader)
    }

    /// An importer that reads the likes `nodes` without loading them: after the import failed further on in the
    /// file, a failure of theirs, which comes first, is the one to report.
    func checkingImporter(of nodes: DeferredNodes) throws -> (importer: TreeImporter, loader: TableLoader) {
        let loader = TableLoader(connection: nil, usesFreeze: false)
        let importer = try TreeImporter(
            resuming: nodes, under: Self.key, of: try reopening(), loader: loader, options: options,
            onFinding: { _ in [:] }, onReject: onReject)
        return (importer, loader)
    }
}
