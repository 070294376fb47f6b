import FirebaseTree
import Foundation

extension Store {
    /// Streams the whole tree as Firebase JSON to `write`, from one consistent snapshot: keys in RTDB order,
    /// numbers as JavaScript writes them, arrays, priorities, depth and sessions as `options` say
    /// (`ExportOptions`). Memory is bounded in bytes whatever the store's size, the shape of its keys or the size
    /// of its values (see `TreeEmitter` and `PartStream`).
    ///
    /// ```swift
    /// try store.exportTree { bytes in try file.write(contentsOf: bytes) }
    /// ```
    ///
    /// `path` (keys from the root, `["posts", uid]`) exports only the node there, as `firebase database:get`
    /// prints it: a subtree, a leaf, or `null` when nothing is there. `onProgress` hears the number of rows read
    /// each time a chunk is written.
    public func exportTree(
        at path: [String] = [], options: ExportOptions = ExportOptions(),
        onProgress: (_ rows: Int) -> Void = { _ in }, to write: (UnsafeBufferPointer<UInt8>) throws -> Void
    ) throws -> ExportReport {
        try export.exportTree(
            at: path, options: options.format, shallow: options.shallow, jobs: options.jobs ?? Store.defaultJobs,
            onProgress: onProgress, to: write)
    }

    /// Streams the children of the node at `path` that `query` selects, as one JSON object in RTDB key order (as
    /// `firebase database:get` with query options prints them), from one snapshot. A leaf node is printed as it
    /// is, a missing one or no selected child as `null`.
    ///
    /// Children stream from the store and are never held: ordered by key, bounds become index ranges, the first N
    /// stop reading after N children and the last N are found by reading backwards first, so a limit costs rows in
    /// proportion to N whatever the node's size. Ordered by value or by a child, a first pass computes each
    /// child's order value (keeping at most the limit's number of them) and a second writes the selected children.
    /// A node inside a record is small, and is read whole.
    public func exportTree(
        at path: [String], query: TreeQuery, options: JSONTextWriter.Options = .init(),
        to write: (UnsafeBufferPointer<UInt8>) throws -> Void
    ) throws -> ExportReport {
        try export.exportTree(at: path, query: query, options: options, to: write)
    }

    /// Keys of the children of the node at `path` that start with `prefix`, in byte order, at most `limit`
    /// (console completion of Firebase paths). Each table is asked with an index range, never scanned whole.
    public func childKeys(of path: [String], startingWith prefix: String, limit: Int) throws -> [String] {
        try export.childKeys(of: path, startingWith: prefix, limit: limit)
    }

    /// About how many rows the tree's tables hold, from the planner's statistics (instant on any size; exact
    /// only after ANALYZE).
    public func estimatedRowCount() throws -> Int {
        try export.estimatedRowCount()
    }
}
