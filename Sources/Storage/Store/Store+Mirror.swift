import FirebaseTree

extension Store {
    /// Applies a Realtime Database's REST streaming feed (server-sent events) until the stream ends, a `cancel`
    /// or an `auth_revoked` event. The first `put` holds the whole location: it is applied as `sync` applies a
    /// file (only differences written, one transaction, readers never blocked); later puts are Firebase's set at
    /// their path and patches its multi-path update, grouped into transactions of at most
    /// `options.batchEvents` events and `options.batchSeconds`, committed at once when `isInputReady` says the
    /// input has nothing more (caught up). `onCommit` hears the progress after each transaction.
    ///
    /// Holds the maintenance lock for its session while it runs: imports, syncs, repairs and other mirrors are
    /// refused (or wait), naming it. A malformed event, or one the store refuses (a key Firebase would refuse),
    /// throws with its line, after committing the events before it.
    ///
    /// ```swift
    /// var reader = EventStreamReader(source: FileDescriptorSource(descriptor: 0, name: "-"))
    /// let report = try store.mirror(&reader)
    /// ```
    public func mirror(
        _ reader: inout EventStreamReader, options: MirrorOptions = MirrorOptions(),
        isInputReady: () -> Bool = { true }, onCommit: (MirrorProgress) throws -> Void = { _ in }
    ) throws -> MirrorReport {
        try Mirroring(connection: connection, maintenance: maintenance, imports: imports, syncing: syncing)
            .mirror(&reader, options: options, isInputReady: isInputReady, onCommit: onCommit)
    }
}
