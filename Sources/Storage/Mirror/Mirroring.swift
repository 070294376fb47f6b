import FirebaseTree
import Foundation
internal import PostgresClient

/// How `Store.mirror` applies a Realtime Database's change feed.
public struct MirrorOptions {
    /// Where the streamed location is in the store (keys from the root): the feed's paths are below it.
    public var at: [String]
    /// At most this many events per transaction.
    public var batchEvents: Int
    /// A transaction commits at the latest this long after its first event.
    public var batchSeconds: Double
    /// Whether a `put` may leave the store (or the node at `at`) empty. A put of `null` at the streamed location is
    /// judged by itself; other removals by what their transaction leaves (its events are written together).
    public var allowsEmptying: Bool
    /// Where large events and the first `put`'s sort go.
    public var temporaryDirectory: String
    /// How long to queue behind a check, repair, import, sync or mirror holding the maintenance lock.
    public var wait: MaintenanceWait

    /// Options; by default the whole tree, 1,000 events or 100 ms per transaction.
    public init(
        at: [String] = [], batchEvents: Int = 1000, batchSeconds: Double = 0.1, allowsEmptying: Bool = false,
        temporaryDirectory: String = TreeSorter.defaultTemporaryDirectory, wait: MaintenanceWait = .none
    ) {
        self.at = at
        self.batchEvents = batchEvents
        self.batchSeconds = batchSeconds
        self.allowsEmptying = allowsEmptying
        self.temporaryDirectory = temporaryDirectory
        self.wait = wait
    }
}

/// How a mirror's stream ended.
public enum MirrorEnd: Sendable, Equatable {
    /// The stream ended (the connection closed): reconnect.
    case endOfStream
    /// A `cancel` event: the database's rules no longer allow this read (its data says why). Someone must look.
    case cancelled(String)
    /// An `auth_revoked` event: the credential expired; reconnect with a new one.
    case authRevoked
}

/// Where a mirror stands, after each transaction.
public struct MirrorProgress: Sendable {
    /// Events applied so far (puts and patches, the first put included).
    public var eventsApplied = 0
    /// `keep-alive` events heard.
    public var keepAlives = 0
    /// Events of a name this version does not know, skipped.
    public var unknownEvents = 0
    /// Transactions committed.
    public var transactions = 0
    /// When the newest applied event was read.
    public var lastEventRead: Date?
    /// When anything (an event, a keep-alive) was last heard.
    public var lastHeard: Date?
    /// Seconds from reading the last committed transaction's newest event to its commit.
    public var secondsBehind = 0.0
    /// The first `put`, applied as a sync.
    public var firstPut: SyncReport?
}

/// What a mirror did, and how its stream ended.
public struct MirrorReport: Sendable {
    /// The last progress.
    public var progress: MirrorProgress
    /// How it ended.
    public var end: MirrorEnd
}

/// A `put` or `patch` event's envelope, `{"path": P, "data": D}`: the path, and D as JSON text when the event is
/// small, or where D lies in the event's data when it is not.
struct FeedEvent {
    var isPatch: Bool
    var path: [String] = []
    /// D's JSON, for an event held in memory.
    var json: String?
    /// D's place in the event's data, for a large one.
    var range: (offset: Int, length: Int)?

    init(_ event: ServerSentEvent) throws {
        isPatch = event.name == "patch"
        let data = event.data
        var reader = JSONReader(source: try data.source())
        func malformed(_ message: String) -> StorageError {
            StorageError(.malformedInput, "line \(event.line): a \(event.name) event's data \(message)")
        }
        do {
            guard try reader.next() == .objectStart else { throw malformed("is not a JSON object") }
            var path: String?
            while let key = try reader.nextChild() {
                switch key {
                case "path":
                    guard reader.token == .string else { throw malformed("has a path that is not a string") }
                    path = reader.string
                case "data":
                    guard let path else {
                        guard data.inMemory != nil else { throw malformed("names its data before its path") }
                        json = try reader.captureValue(maximumBytes: .max).text
                        continue
                    }
                    self.path = try Self.keys(of: path, malformed)
                    if data.inMemory != nil {
                        json = try reader.captureValue(maximumBytes: .max).text
                    } else {
                        // The rest is D and the envelope's closing brace: D is read where it lies, by its reader.
                        let start = reader.tokenStart
                        guard data.lastNonWhitespace > start else { throw malformed("is cut short") }
                        range = (start, data.lastNonWhitespace - start)
                        return
                    }
                default:
                    try reader.skipValue()
                }
            }
            guard let path else { throw malformed("has no path") }
            self.path = try Self.keys(of: path, malformed)
            guard json != nil else { throw malformed("has no data") }
        } catch let error as TreeError {
            throw malformed("is not JSON: \(StorageError(error).message)")
        }
    }

    /// The keys of a feed path (`/a/b`, `/` for the root).
    private static func keys(of path: String, _ malformed: (String) -> StorageError) throws -> [String] {
        guard path.hasPrefix("/") else { throw malformed("has a path that does not start with /") }
        return path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
    }
}

/// Applies a Realtime Database's REST streaming feed (`Store.mirror`).
struct Mirroring {
    let connection: StoreConnection
    let maintenance: MaintenanceLock
    let imports: TreeImport
    let syncing: TreeSync

    func mirror(
        _ reader: inout EventStreamReader, options: MirrorOptions, isInputReady: () -> Bool,
        onCommit: (MirrorProgress) throws -> Void
    ) throws -> MirrorReport {
        try maintenance.take(wait: options.wait, scope: .session)
        try connection.execute("SELECT set_config('application_name', \(StoreConnection.mirrorApplicationName), false)")
        defer {
            if connection.isConnected, !connection.isInTransaction {
                try? maintenance.releaseSession()
                _ = try? connection.execute("SELECT set_config('application_name', 'admin', false)")
            }
        }
        let row = MirrorProgressRow(connection: connection)
        try row.start(at: options.at)
        var progress = MirrorProgress()
        do {
            let end = try mirror(
                &reader, options: options, progress: &progress, row: row, isInputReady: isInputReady, onCommit: onCommit
            )
            try row.update(progress, state: end.state)
            return MirrorReport(progress: progress, end: end)
        } catch {
            if connection.isConnected, !connection.isInTransaction { try? row.update(progress, state: "failed") }
            throw error
        }
    }

    private func mirror(
        _ reader: inout EventStreamReader, options: MirrorOptions, progress: inout MirrorProgress,
        row: MirrorProgressRow, isInputReady: () -> Bool, onCommit: (MirrorProgress) throws -> Void
    ) throws -> MirrorEnd {
        var pending: ServerSentEvent?
        var hasSynced = false
        let clock = ContinuousClock()
        while true {
            guard let event = try pending ?? reader.next() else {
                return .endOfStream
            }
            pending = nil
            progress.lastHeard = Date()
            switch event.name {
            case "keep-alive":
                progress.keepAlives += 1
                continue
            case "cancel":
                let reason = event.data.inMemory.map { String(decoding: $0, as: UTF8.self) } ?? ""
                return .cancelled(reason == "null" ? "" : reason)
            case "auth_revoked":
                return .authRevoked
            case "put", "patch":
                break
            default:
                progress.unknownEvents += 1
                continue
            }
            let feed = try FeedEvent(event)
            let read = Date()
            if !hasSynced && !feed.isPatch || feed.range != nil {
                // A connection's first put holds the whole location: written as sync writes a file, only what
                // differs. So is any put too large to hold in memory.
                guard !feed.isPatch else {
                    throw StorageError(
                        .malformedInput,
                        "line \(event.line): a patch of \(event.data.count) bytes is larger than this version applies")
                }
                hasSynced = true
                let report = try sync(feed, event, options: options)
                if progress.firstPut == nil { progress.firstPut = report }
                progress.eventsApplied += 1
                progress.transactions += 1
                progress.lastEventRead = read
                progress.secondsBehind = Date().timeIntervalSince(read)
                try row.update(progress)
                try onCommit(progress)
                continue
            }
            // Later events, grouped: a transaction ends at batchEvents, after batchSeconds, when the input has
            // nothing more ready (caught up), or before an event that is no small put or patch.
            var failure: (any Error)?
            var newest = read
            let started = clock.now
            try connection.withTransaction {
                var batch: [(feed: FeedEvent, line: Int, read: Date)] = []
                var fold = EventFold()
                var next: (feed: FeedEvent, line: Int, read: Date)? = (feed, event.line, read)
                while let current = next {
                    next = nil
                    do {
                        try StorageError.converting { try fold.add(current.feed, at: options.at) }
                    } catch {
                        failure = StorageError.describing(error, line: current.line)
                        break
                    }
                    batch.append(current)
                    guard batch.count < options.batchEvents, (clock.now - started).seconds < options.batchSeconds,
                        reader.hasBufferedInput || isInputReady()
                    else { break }
                    // What goes wrong with a later event ends the mirror after this transaction commits.
                    do {
                        guard let following = try reader.next() else { break }
                        progress.lastHeard = Date()
                        if following.name == "patch" || following.name == "put" {
                            let parsed = try FeedEvent(following)
                            if parsed.range == nil {
                                next = (parsed, following.line, Date())
                                continue
                            }
                        }
                        pending = following
                    } catch {
                        failure = error
                    }
                }
                let applied = try write(fold, of: batch, options: options, failure: &failure)
                progress.eventsApplied += applied
                if applied > 0 { newest = batch[applied - 1].read }
                // Written with the events: the row is exactly as new as what the store holds.
                var committed = progress
                committed.transactions += 1
                committed.lastEventRead = newest
                try row.update(committed)
            }
            progress.transactions += 1
            progress.lastEventRead = newest
            progress.secondsBehind = Date().timeIntervalSince(newest)
            try onCommit(progress)
            if let failure { throw failure }
        }
    }

    /// Writes a transaction's events, folded into the nodes they change (`EventFold`). When the fold cannot say
    /// what they did, or its write is refused, the events are written one by one (`apply`) up to the one refused,
    /// which becomes `failure`. The events written.
    private func write(
        _ fold: EventFold, of batch: [(feed: FeedEvent, line: Int, read: Date)], options: MirrorOptions,
        failure: inout (any Error)?
    ) throws -> Int {
        guard !fold.isEmpty else { return batch.count }
        if !fold.needsEventByEvent {
            do {
                try connection.withTransaction {
                    // Before the records are read: a write of the console's must not start from their old values.
                    try imports.treeRows.lockTree()
                    let lifted = try fold.liftedIntoRecords(
                        recordPaths: imports.treeRows.recordPaths(holding:),
                        readChildren: imports.exportedChildren)
                    _ = try imports.store(lifted.nodeWrites, allowsEmptying: options.allowsEmptying)
                }
                return batch.count
            } catch let error as StorageError where error.kind == .connectionLost {
                throw error
            } catch {
                // Which event is refused, and the store as of the one before it: found by writing them as they
                // came (the fold's write was a savepoint, rolled back).
            }
        }
        for (index, event) in batch.enumerated() {
            do {
                try apply(event.feed, options: options)
            } catch let error as StorageError where error.kind == .connectionLost {
                throw error
            } catch {
                failure = StorageError.describing(error, line: event.line)
                return index
            }
        }
        return batch.count
    }

    /// A put or patch in the open transaction, with Firebase's semantics: `set`, or a multi-path `update`.
    private func apply(_ feed: FeedEvent, options: MirrorOptions) throws {
        guard let json = feed.json else { return }
        let path = options.at + feed.path
        _ = try imports.write(
            feed.isPatch ? .update(json: json) : .set(json: json), at: path, allowsEmptying: options.allowsEmptying)
    }

    /// A put applied as sync applies a file: the node at its path made equal to its data, only differences
    /// written, in a transaction of its own.
    private func sync(_ feed: FeedEvent, _ event: ServerSentEvent, options: MirrorOptions) throws -> SyncReport {
        let data = event.data
        let open: () throws -> any ByteSource = {
            if let json = feed.json { return MemorySource(json) }
            guard let range = feed.range else { return MemorySource("null") }
            return try data.source(from: range.offset, length: range.length)
        }
        return try syncing.sync(
            opening: open,
            options: SyncOptions(
                at: options.at + feed.path, allowsEmptying: options.allowsEmptying, maxListed: 0,
                temporaryDirectory: options.temporaryDirectory, wait: options.wait))
    }
}

extension StorageError {
    /// `error`, said to come from the event on `line` of the stream.
    static func describing(_ error: any Error, line: Int) -> StorageError {
        var error = (error as? StorageError) ?? StorageError(.malformedInput, "\(error)")
        error.message = "line \(line): " + error.message
        return error
    }
}

extension MirrorEnd {
    /// The end as `mirror_progress` says it.
    var state: String {
        switch self {
        case .endOfStream: "ended"
        case .cancelled: "cancelled"
        case .authRevoked: "auth_revoked"
        }
    }
}
