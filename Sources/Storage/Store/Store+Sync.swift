import FirebaseTree
import Foundation

extension Store {
    /// Brings the store (or the node at `options.at`) to what importing the source would make of it, writing only
    /// what differs: the source is compared with the store's export in one streaming pass (as `verify` compares
    /// them, keys in any order), and each record, leaf or node that differs is rewritten or removed, the kept
    /// copies of the posts and chats it touches settled, all in one transaction. Nothing is changed when it
    /// throws, or with `options.isDryRun`.
    ///
    /// The transaction takes row locks only (the tables in ROW EXCLUSIVE mode): readers are never blocked, and
    /// the app's writes wait only for the rows the sync rewrites. It reads the store from its own snapshot, so a
    /// row another session changes meanwhile and the sync then rewrites fails the sync (a serialization failure,
    /// SQLSTATE 40001: nothing was changed; run it again) rather than losing that change. It holds the maintenance
    /// lock for its session, so no check, repair, import or other sync runs beside it (`options.wait` says how
    /// long to queue behind one); a merge or write verb waits for it.
    ///
    /// `open` gives the source's bytes from its start; it is called again when the source must be sorted.
    /// `isCancelled`, asked between batches of rows, stops the sync (rolled back, as a cancelled statement).
    /// Values import refuses are left out and handed to the observer's `onReject`, the sync aborting once more than
    /// `options.maximumRejects` were met. A source holding nothing does not empty a store holding something
    /// unless `options.allowsEmptying`.
    ///
    /// ```swift
    /// let report = try store.sync(opening: { try FileDescriptorSource(path: "backup.json") })
    /// ```
    public func sync(
        opening open: () throws -> any ByteSource, options: SyncOptions = SyncOptions(),
        observer: SyncObserver = SyncObserver()
    ) throws -> SyncReport {
        try syncing.sync(opening: open, options: options, observer: observer)
    }

    /// `sync(opening:…)` of a source that can be read only once (stdin, a pipe): what it reads is kept in a
    /// temporary file in case it must be sorted and so read again.
    public func sync(
        source: some ByteSource, options: SyncOptions = SyncOptions(), observer: SyncObserver = SyncObserver()
    ) throws -> SyncReport {
        let open = try Verification.spooled(source, temporaryDirectory: options.temporaryDirectory)
        return try syncing.sync(opening: open, options: options, observer: observer)
    }
}
