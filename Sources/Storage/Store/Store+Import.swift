import FirebaseTree
import Foundation

extension Store {
    /// Imports a Firebase JSON export in one transaction: with `.replace` the store becomes equal to the file;
    /// with `.merge`, as Firebase's `update` at the root, each top-level node of the file replaces the store's
    /// node of that name and the others stay.
    /// Nothing is changed when it throws, or with `isDryRun`. A file holding nothing does not empty a store
    /// holding something unless `options.allowsEmptying`.
    ///
    /// Imports are serializable with each other and with the app's writes: a whole-tree replace truncates the
    /// tables (no one reads them meanwhile), and any other import locks them against writes first
    /// (`TreeRows.lockTree`), so that what it replaces is exactly what the store held when it began. It waits as
    /// long as it takes for the locks (`lock_timeout` 0); others see it as `admin import` in `pg_stat_activity`.
    ///
    /// ```swift
    /// let report = try store.importTree(from: FileDescriptorSource(descriptor: fd, name: "backup.json"))
    /// ```
    /// `observer` hears the rejects, the rows so far and the steps after the reading, and may stop the import
    /// (`ImportObserver`). A failure carries how far the import got in its context.
    ///
    /// `reopening`, when given, reads the same file again from its start (a regular file opened anew): a
    /// whole-tree replace then loads on `options.jobs` sessions, each importing the top-level nodes it reaches
    /// first and skipping the others'; and the likes are read after the posts, from where /postLikes starts, to
    /// be sent with their owners (`LikesAfterPosts`; with one session too). The observer's `isCancelled` and
    /// `onReject` may then be called from other threads.
    public func importTree(
        from source: some ByteSource, options: ImportOptions = ImportOptions(),
        reopening: (@Sendable () throws -> any ByteSource)? = nil, observer: ImportObserver = ImportObserver()
    ) throws -> ImportReport {
        if let selection = options.topLevel {
            // The selected nodes, merged whole into the root: a replace also names, as null, each selected node
            // of the store the file lacks, so that it goes; on one session, the file read once.
            guard options.at.isEmpty else {
                throw StorageError(
                    .refused, "--only and --exclude pick top-level nodes of the whole tree: not with --at")
            }
            var merge = options
            merge.topLevel = nil
            merge.mode = .merge
            merge.jobs = 1
            let removing = options.mode == .replace ? try treeRows.topLevelKeys() : []
            return try imports.importTree(
                from: TopLevelFilterSource(source, selection: selection, removing: removing), options: merge,
                observer: observer)
        }
        return try imports.importTree(from: source, options: options, reopening: reopening, observer: observer)
    }

    /// Writes at `path` in one transaction, with import's validation (keys, limits, rejects abort) and mapping:
    /// the node's rows are replaced, or for `update` those of each child or path (`"a/b"`) its object names. A
    /// path inside a typed record (a post's `poster/username`) rewrites that record: it is read, changed in
    /// memory (it is small) and stored again, so the record stays one row.
    ///
    /// A write that would leave the whole tree empty is refused unless `allowsEmptying`, as import refuses a
    /// file holding nothing: a script's `set / null` must not wipe production by accident.
    ///
    /// ```swift
    /// try store.write(.set(json: #"{"username": "alice"}"#), at: ["users", "alice"])
    /// ```
    public func write(_ write: TreeWrite, at path: [String], allowsEmptying: Bool = false) throws -> WriteReport {
        try imports.write(write, at: path, allowsEmptying: allowsEmptying)
    }
}
