import FirebaseTree
import Foundation
import PostgresClient

extension Store {
    /// Imports a Firebase JSON export in one transaction: with `.replace` the store becomes equal to the file;
    /// with `.merge`, as Firebase's `update` at the root, each top-level node of the file replaces the store's
    /// node of that name and the others stay.
    /// Nothing is changed when it throws, or with `isDryRun`. A file holding nothing does not empty a store
    /// holding something unless `options.allowsEmptying`.
    ///
    /// Imports are serializable with each other and with the app's writes: a whole-tree replace truncates the
    /// tables (no one reads them meanwhile), and any other import locks them against writes first (`lockTree()`),
    /// so that what it replaces is exactly what the store held when it began. It waits as long as it takes for
    /// the locks (`lock_timeout` 0); others see it as `admin import` in `pg_stat_activity`.
    ///
    /// ```swift
    /// let report = try store.importTree(from: FileDescriptorSource(descriptor: fd, name: "backup.json"))
    /// ```
    /// `onReject` sees each rejected value as it is met (to write a rejects file); the import aborts once more
    /// than `options.maximumRejects` were rejected. A failure carries how far the import got in its context.
    /// `onRows` hears the number of rows mapped so far, every few thousand rows. `isCancelled`, asked as often, stops
    /// the import (rolled back, as a cancelled statement): during COPY the server's answer to a cancel request is
    /// only read at the end, so the reading must stop by itself.
    public func importTree(
        from source: some ByteSource, options: ImportOptions = ImportOptions(),
        onReject: @escaping (ImportReject) throws -> Void = { _ in },
        onRows: @escaping (Int) -> Void = { _ in }, isCancelled: @escaping () -> Bool = { false }
    ) throws -> ImportReport {
        for key in options.at {
            if let problem = FirebaseKey.problem(with: key) ?? (key.hasPrefix(".") ? "a priority is not a node" : nil) {
                throw StorageError(.invalidValue, "cannot import at \"\(key)\": not a Firebase key: \(problem)")
            }
        }
        let clock = ContinuousClock()
        let started = clock.now
        var report = ImportReport()
        let wholeTree = options.mode == .replace && options.at.isEmpty
        var replaced = 0
        try connection.withTransaction(rollback: options.isDryRun) {
            try connection.execute(
                """
                SELECT set_config('lock_timeout', '0', true),
                    set_config('application_name', \(Self.importApplicationName), true)
                """)
            let heldSomething: Bool
            if wholeTree {
                // The maintenance lock first: checks and repairs then see an import running (and fail at once or
                // queue with --wait) instead of blocking on the tables.
                try connection.execute("SELECT pg_advisory_xact_lock(\(Self.maintenanceLockKey))")
                // The lock TRUNCATE takes, before anything reads the tables: a weaker one first would deadlock
                // with another import doing the same.
                try connection.execute("LOCK TABLE \(Self.treeTableList) IN ACCESS EXCLUSIVE MODE")
                heldSomething = try !isEmpty()
                try connection.execute("TRUNCATE \(Self.treeTableList)")
            } else {
                try lockTree()
                heldSomething = false
            }
            // Likes carry their post's owner: what an import does to /posts moves likes between owners.
            let postKeysBefore = wholeTree ? [] : try heldKeys(of: .posts, touchedAt: options.at)
            let chatKeysBefore = wholeTree ? [] : try heldKeys(of: .chats, touchedAt: options.at)
            var deletedPosts = false
            var deletedChats = false
            if !options.at.isEmpty {
                if let record = try recordPath(holding: options.at) {
                    let error = StorageError(
                        .invalidValue,
                        "cannot import at /\(options.at.joined(separator: "/")): it lies inside the record /"
                            + record.joined(separator: "/"),
                        hint: "Import the whole record at /\(record.joined(separator: "/")).")
                    throw error.remedied(.importWholeRecord(path: record))
                }
                if options.mode == .replace {
                    replaced = try Store.deleteRows(under: options.at, on: connection).values.reduce(0, +)
                }
            }
            // COPY FREEZE needs tables truncated in the same transaction.
            let loader = TableLoader(connection: connection, usesFreeze: wholeTree)
            loader.onRows = onRows
            loader.isCancelled = isCancelled
            let importer = TreeImporter(
                source: source, loader: loader, options: options,
                deleteRows: { [connection] path in
                    // A merge names each node it replaces, `null` ones included.
                    if path.first == "posts" { deletedPosts = true }
                    if path.first == "chats" { deletedChats = true }
                    var deleted = try Store.deleteRows(under: path, on: connection)
                    if loader.hasStagedLikes {
                        deleted[.postLikes, default: 0] += try self.deleteStagedLikes(under: path)
                    }
                    return deleted
                },
                onReject: onReject)
            do {
                try StorageError.converting { try importer.run() }
                try loader.flush()
                try settleOwnership(
                    staged: loader.hasStagedLikes, wholeTree: wholeTree,
                    wrotePosts: !wholeTree && (deletedPosts || options.at.first == "posts"),
                    postKeysBefore: postKeysBefore, at: options.at)
                try settleChatHolders(
                    wholeTree: wholeTree, wroteChats: !wholeTree && (deletedChats || options.at.first == "chats"),
                    chatKeysBefore: chatKeysBefore, at: options.at)
            } catch let error as StorageError {
                loader.abort()
                throw error.adding(context: "import rolled back after reading \(importer.bytesRead) bytes")
            } catch {
                loader.abort()
                throw error
            }
            report = importer.report
            report.rowsReplaced += replaced
            if options.mode == .replace, !options.allowsEmptying, report.rowsImported == 0,
                heldSomething || replaced > 0
            {
                let node = options.at.isEmpty ? "the store" : "the node at /" + options.at.joined(separator: "/")
                let error = StorageError(
                    .refused,
                    "the file holds nothing (null or {}): replacing \(node) with it would delete everything there",
                    hint: "Nothing was changed. If emptying it is what you want, allow it.")
                throw error.remedied(.allowEmptying)
            }
        }
        report.seconds = (clock.now - started).seconds
        report.isDryRun = options.isDryRun
        report.mode = options.mode
        return report
    }

    /// Keeps what the store derives from /posts in step with what the import did to it: stores the likes it
    /// staged, and the post-key lookup and the likes of the posts it added or removed (`settleLikeOwners`): under
    /// /posts/{uid}, the keys that user held before (`postKeysBefore`) or holds now but not both (a rewritten post
    /// keeps its rows); all of them when it wrote /posts whole. A whole-tree import held nothing before, so the
    /// lookup is filled from posts and staging gives each like its owners.
    private func settleOwnership(
        staged: Bool, wholeTree: Bool, wrotePosts: Bool, postKeysBefore: [String]?, at: [String]
    ) throws {
        if wholeTree {
            try connection.execute("INSERT INTO post_keys (post_key, owner_uid) SELECT post_key, owner_uid FROM posts")
        }
        guard staged || wrotePosts else { return }
        let isDistributed = try isDistributed()
        if staged { try storeStagedLikes(isDistributed: isDistributed) }
        guard wrotePosts else { return }
        let keys = try changedKeys(of: .posts, before: postKeysBefore, at: at)
        if keys?.isEmpty == true { return }
        try settlePostKeys(ofKeys: keys)
        try settleLikeOwners(ofKeys: keys, isDistributed: isDistributed)
    }

    /// Keeps `chat_holders` in step with what the import did to /chats, as `settleOwnership` does for /posts:
    /// under /chats/{uid}, the chat keys that user held before or holds now but not both; all of them when it
    /// wrote /chats whole; filled from chats after a whole-tree import.
    private func settleChatHolders(wholeTree: Bool, wroteChats: Bool, chatKeysBefore: [String]?, at: [String]) throws {
        if wholeTree {
            try connection.execute("INSERT INTO chat_holders (chat_key, uid) SELECT chat_key, uid FROM chats")
            return
        }
        guard wroteChats else { return }
        let keys = try changedKeys(of: .chats, before: chatKeysBefore, at: at)
        if keys?.isEmpty == true { return }
        try settleChatHolders(ofKeys: keys)
    }

    /// The tree's tables as a list for LOCK and TRUNCATE.
    /// The tree's tables, quoted and separated by commas (no parameters: LOCK and TRUNCATE take none).
    private static let treeTableList = Query.identifiers(treeTables + lookupTables)

    /// Locks the tree's tables against writes (`SHARE ROW EXCLUSIVE`, which conflicts with itself and with the
    /// app's inserts, updates and deletes, not with reads) for the rest of the transaction, so that a merge or a
    /// write replaces what the store holds as one serializable step. A deadlock with an app transaction that
    /// held one table and wanted another is retried.
    func lockTree() throws {
        for attempt in 1... {
            do {
                return try connection.withTransaction {
                    try connection.execute("LOCK TABLE \(Self.treeTableList) IN SHARE ROW EXCLUSIVE MODE")
                }
            } catch let error as StorageError where error.sqlState == .deadlockDetected && attempt < 5 {
                continue
            }
        }
    }

    /// The path of a stored record that holds `path` inside it (`/posts/UID/KEY` for `/posts/UID/KEY/poster`),
    /// or is it when `orIs`, if there is one.
    func recordPath(holding path: [String], orIs: Bool = false) throws -> [String]? {
        guard let root = path.first else { return nil }
        for table in TreeTable.tables(under: root) where path.count - 1 > table.keyDepth - (orIs ? 1 : 0) {
            let query: Query = "SELECT \(Query.anyRow(in: table.name, where: table.keyConditions(path.dropFirst())))"
            if try connection.query(query)[0].decode(Bool.self, at: 0) {
                return Array(path.prefix(table.keyDepth + 1))
            }
        }
        return nil
    }

    /// Deletes every row stored at or below an absolute Firebase path; returns the counts per table.
    static func deleteRows(under path: [String], on connection: StoreConnection) throws -> [TreeTable: Int] {
        guard let root = path.first else { return [:] }
        let below = Array(path.dropFirst())
        var deleted: [TreeTable: Int] = [:]
        for table in TreeTable.tables(under: root) where below.count <= table.keyDepth {
            deleted[table, default: 0] += try connection.execute(
                "DELETE FROM \(identifier: table.name) WHERE \(table.keyConditions(below))")
        }
        deleted[.unmappedValues, default: 0] += try connection.execute(
            "DELETE FROM unmapped_values WHERE \(TreeTable.unmappedRange(at: path))")
        return deleted
    }
}
