import FirebaseTree
internal import PostgresClient

/// A row of a `PartStream`: the batch's row, and for a large row its other columns, fetched on their own.
struct StreamRow: ExportRow {
    let row: StoreRow
    let large: StoreRow?
    /// Columns before this one come from `row` always (the keys).
    let keyCount: Int

    func withText<R>(_ column: Int, _ body: (UnsafeBufferPointer<UInt8>?) throws -> R) rethrows -> R {
        if let large, column >= keyCount { return try large.withText(column - keyCount, body) }
        return try row.withText(column, body)
    }
}

/// One read of a table's rows (`TableRead`) in export order, fetched from cursors in batches bounded in bytes:
/// rows whose text is large come without it (`TreeTable.largeRowBytes`) and are completed one by one, and a batch
/// holds at most `batchBytes` of the rest. The next batch is requested as soon as one arrives, so the server
/// reads it while this process writes JSON; one request is in flight per connection.
///
/// A read that needs only its first rows (a limit query) goes by pages: each statement with a LIMIT, then, when
/// that page was full, again with an OFFSET past it and four times the LIMIT. On one server a cursor reads only
/// the rows fetched, but Citus brings every shard's rows to the coordinator before a cursor's first FETCH unless
/// the statement has a LIMIT, which it pushes down to the shards. The pages of a statement neither skip nor repeat
/// a row: they see the read's one snapshot, and its ORDER BY tells every row apart (a statement without one
/// reads a single row).
final class PartStream {
    let table: TreeTable
    private let selects: [Query]
    private var nextSelect = 0
    /// The rows of each statement's first page, when the read goes by pages.
    private let firstPage: Int?
    /// The most rows a page asks for.
    static let largestPage = 1 << 40
    /// The current statement's page: its LIMIT and OFFSET.
    private var page: (limit: Int, offset: Int)?
    /// Rows the current cursor returned so far: a page that returned its LIMIT may have more after it.
    private var rowsInCursor = 0
    private var cursor: String?
    private let connection: StoreConnection
    private let shared: Shared
    private var batch: StoreResult?
    private var index = 0
    /// Skips a like's rows after the first (one per owner of its key).
    private var repeatedLikes = RepeatedLikeFilter()
    /// Rows the FETCH behind `prefetched` asked for: fewer mean the cursor is done.
    private var prefetchedSize = 0
    private var isCursorDone = false
    private var isPastFirstBatch = false
    private var fetchSize: Int
    private let largestFetch: Int
    private var prefetched: StoreResult?
    /// The row `advance()` moved to; nil after the last row.
    private(set) var currentRow: StreamRow?
    /// The row's path without its last key (root first), shared with the rows before while it stays the same.
    private(set) var parentPath: [String] = []
    /// The row's last key, once decoded.
    private var leaf: String?
    /// Where the table's root key falls among the typed tables' roots in export order (nil for unmapped values):
    /// rows of two tables under different roots compare by this alone.
    private let rootRank: Int?

    /// Bytes of rows one batch may hold.
    static let batchBytes = 4 << 20
    /// Rows asked for by a stream's first FETCH (every stream fetches once before the merge starts).
    static let firstFetch = 32

    /// What the streams of one read share: the one FETCH in flight, cursor names, rows fetched.
    final class Shared {
        var inFlight: (stream: PartStream, fetch: Query, size: Int)?
        var cursorCount = 0
        /// Rows the server sent, prefetched ones included.
        var rowsFetched = 0
        /// The most bytes of row data one batch held.
        var largestBatchBytes = 0
    }

    /// A stream of `read`'s rows on `connection`; with `firstPage`, by pages of that many rows and then more.
    init(_ read: TableRead, connection: StoreConnection, shared: Shared, firstPage: Int? = nil) {
        table = read.table
        selects = read.selects
        self.firstPage = firstPage.map { min($0, Self.largestPage) }
        self.connection = connection
        self.shared = shared
        largestFetch = max(16, min(5000, Self.batchBytes / read.table.batchRowBound))
        fetchSize = min(Self.firstFetch, largestFetch)
        rootRank = read.table.rootKey.map { root in
            Set(TreeTable.allCases.compactMap(\.rootKey)).filter { FirebaseKey.exportPrecedes($0, root) }.count
        }
    }

    /// Collects the FETCH in flight on the connection, whichever stream it belongs to.
    func settle() throws {
        guard let (owner, fetch, size) = shared.inFlight else { return }
        shared.inFlight = nil
        let result = try connection.receive(fetch)
        shared.rowsFetched += result.count
        shared.largestBatchBytes = max(shared.largestBatchBytes, result.dataByteCount)
        owner.prefetched = result
        owner.prefetchedSize = size
    }

    private func fetchStatement() -> Query {
        guard let cursor else { preconditionFailure("a FETCH before its cursor was declared") }
        return Query.fetch(forward: fetchSize, from: cursor)
    }

    /// Sends the next FETCH of this stream without waiting for it.
    private func prefetch() throws {
        try settle()
        let fetch = fetchStatement()
        try connection.sendWithoutWaiting(fetch)
        shared.inFlight = (self, fetch, fetchSize)
        fetchSize = min(largestFetch, fetchSize * 4)
    }

    /// Moves to the next row, past a like's rows after its first.
    func advance() throws {
        try moveToNextRow()
        while table == .postLikes, let row = currentRow, repeatedLikes.repeats(row) { try moveToNextRow() }
    }

    private func moveToNextRow() throws {
        leaf = nil
        while index >= batch?.count ?? 0 {
            currentRow = nil
            if cursor != nil, !isCursorDone {
                if prefetched == nil {
                    if shared.inFlight?.stream !== self { try prefetch() }
                    try settle()
                }
            } else {
                if let full = page, rowsInCursor == full.limit {
                    page = (min(full.limit * 4, Self.largestPage), full.offset + full.limit)
                } else {
                    guard nextSelect < selects.count else { return }
                    nextSelect += 1
                    page = firstPage.map { ($0, 0) }
                }
                try settle()
                shared.cursorCount += 1
                let name = "export_\(shared.cursorCount)"
                cursor = name
                var select = selects[nextSelect - 1]
                if let page { select = select + " LIMIT \(page.limit) OFFSET \(page.offset)" }
                try connection.execute("DECLARE \(identifier: name) NO SCROLL CURSOR FOR \(select)")
                rowsInCursor = 0
                isPastFirstBatch = false
                try prefetch()
                try settle()
            }
            guard let fetched = prefetched else { preconditionFailure("a settled FETCH leaves its rows") }
            batch = fetched
            prefetched = nil
            index = 0
            rowsInCursor += fetched.count
            isCursorDone = fetched.count < prefetchedSize
            // Ask for the next batch at once, so the server reads it while these rows are written; not after a
            // cursor's first, which is all that a small read (a limit, a record) needs.
            if !isCursorDone, isPastFirstBatch { try prefetch() }
            isPastFirstBatch = true
        }
        guard let batch else { return }
        let row = batch[index]
        index += 1
        var large: StoreRow?
        if !row.hasText(table.exportedColumns.count, equalTo: "t") {
            try settle()
            large = try connection.query(table.largeRowQuery(keys: row)).first
        }
        let current = StreamRow(
            row: row, large: large,
            keyCount: table == .unmappedValues ? UnmappedColumn.path.rawValue + 1 : table.keyDepth)
        currentRow = current
        do {
            (parentPath, leaf) = try table.parentPath(of: current, reusing: parentPath)
        } catch let error as StorageError {
            throw error.adding(context: "exporting \(table.name)")
        }
    }

    /// The row's last key.
    var leafKey: String {
        if let leaf { return leaf }
        guard let row = currentRow else { return "" }
        // Key columns are NOT NULL.
        let key =
            table == .unmappedValues
            ? (try? UnmappedPath.lastKey(of: row)) ?? "" : row[table.keyDepth - 1] ?? ""
        leaf = key
        return key
    }

    /// Whether the stream's next row may lie below the current one (an unmapped value below another: data SQL
    /// can hold and the tree cannot), so that the current one must be held. False when the next row, in the
    /// current batch, is seen not to; rows of typed tables never nest.
    var nextRowMayLieBelow: Bool {
        guard table == .unmappedValues else { return false }
        guard let batch, index < batch.count, let current = currentRow?.row else { return true }
        let next = batch[index]
        return current.withText(UnmappedColumn.root.rawValue) { root in
            next.withText(UnmappedColumn.root.rawValue) { nextRoot in
                guard let root, let nextRoot, root.elementsEqual(nextRoot) else { return false }
                return current.withText(UnmappedColumn.path.rawValue) { path in
                    next.withText(UnmappedColumn.path.rawValue) { nextPath in
                        // `{a,b}` then `{a,b,…`: the same text without the brace, then a comma. An empty path (a
                        // value at the root) is below nothing but its root.
                        guard let path, let nextPath else { return true }
                        if path.count == 2 { return true }
                        guard nextPath.count > path.count,
                            nextPath[path.count - 1] == UInt8(ascii: ",") || path.contains(UInt8(ascii: "\""))
                        else { return false }
                        return nextPath.prefix(path.count - 1).elementsEqual(path.prefix(path.count - 1))
                    }
                }
            }
        }
    }

    /// Whether `advance()` is on a row.
    var hasRow: Bool { currentRow != nil }

    /// The top-level key the row lies under.
    var rootKey: String { parentPath.first ?? leafKey }

    /// The current row's path, for a stream the merge handed out (which always has a row).
    var currentPath: [String] {
        parentPath + [leafKey]
    }

    /// The current row of a stream the merge handed out (which always has one).
    var row: StreamRow {
        guard let currentRow else { preconditionFailure("a stream handed out by the merge has a row") }
        return currentRow
    }

    /// Whether this row's path comes before `other`'s in export order (see `PartMerge.precedes`), comparing the
    /// shared parent paths first so that the last keys are decoded only when those are equal.
    func precedes(_ other: PartStream) -> Bool {
        if let rootRank, let otherRank = other.rootRank, rootRank != otherRank { return rootRank < otherRank }
        let mine = parentPath
        let theirs = other.parentPath
        for depth in 0..<min(mine.count, theirs.count) where !FirebaseKey.same(mine[depth], theirs[depth]) {
            return FirebaseKey.exportPrecedes(mine[depth], theirs[depth])
        }
        if mine.count == theirs.count { return FirebaseKey.exportPrecedes(leafKey, other.leafKey) }
        if mine.count < theirs.count {
            let key = leafKey
            return FirebaseKey.same(key, theirs[mine.count]) || FirebaseKey.exportPrecedes(key, theirs[mine.count])
        }
        let key = other.leafKey
        return !FirebaseKey.same(mine[theirs.count], key) && FirebaseKey.exportPrecedes(mine[theirs.count], key)
    }

    /// Whether `other`'s row lies at or below this row's path.
    func contains(_ other: PartStream) -> Bool {
        if let rootRank, let otherRank = other.rootRank, rootRank != otherRank { return false }
        let mine = parentPath
        let theirs = other.parentPath
        guard theirs.count >= mine.count, zip(mine, theirs).allSatisfy({ FirebaseKey.same($0, $1) }) else {
            return false
        }
        return FirebaseKey.same(theirs.count == mine.count ? other.leafKey : theirs[mine.count], leafKey)
    }
}

/// Merges row streams into one sequence in export path order. Streams mostly run long (one table after another),
/// so the current stream's next row is compared with the runner-up only.
struct PartMerge {
    private let streams: [PartStream]
    private let isReversed: Bool
    private let shared: PartStream.Shared
    private let connection: StoreConnection
    private var best: Int?
    private var runnerUp: Int?

    init(streams: [PartStream], reversed: Bool, shared: PartStream.Shared, connection: StoreConnection) throws {
        self.streams = streams
        self.shared = shared
        self.connection = connection
        isReversed = reversed
        for stream in streams { try stream.advance() }
        rank()
    }

    /// The stream positioned on the next row; nil after the last.
    func next() -> PartStream? {
        best.map { streams[$0] }
    }

    /// Rows the server sent so far.
    var rowsFetched: Int { shared.rowsFetched }

    /// The most bytes of row data one batch held.
    var largestBatchBytes: Int { shared.largestBatchBytes }

    /// Whether a row of another stream lies at or below the path of the row `next()` returned, so that a part
    /// written for it may still grow. Only the runner-up can: any such row sorts right after it.
    var nextRowMayGrow: Bool {
        guard let best, let runnerUp else { return false }
        return streams[best].contains(streams[runnerUp])
    }

    /// Moves past the row `next()` returned.
    mutating func advance() throws {
        guard let current = best else { return }
        try streams[current].advance()
        if streams[current].hasRow, runnerUp.map({ comesFirst(streams[current], streams[$0]) }) ?? true {
            return
        }
        rank()
    }

    private mutating func rank() {
        best = nil
        runnerUp = nil
        for index in streams.indices where streams[index].hasRow {
            if let first = best, !comesFirst(streams[index], streams[first]) {
                if let second = runnerUp, !comesFirst(streams[index], streams[second]) { continue }
                runnerUp = index
            } else {
                runnerUp = best
                best = index
            }
        }
    }

    /// Collects the FETCH in flight, if any, so that the connection can run another statement meanwhile.
    func collectFetchInFlight() throws {
        try streams.first?.settle()
    }

    /// Collects a FETCH still in flight (when reading stopped early or failed), so that the connection can run
    /// the next statement.
    func close() {
        if shared.inFlight != nil {
            connection.drainResults()
            shared.inFlight = nil
        }
        // A read may stop early (a first N); its cursors' names are free for the next read of the transaction.
        if shared.cursorCount > 0 { _ = try? connection.execute("CLOSE ALL") }
    }

    /// Whether `a`'s row is merged out before `b`'s.
    private func comesFirst(_ a: PartStream, _ b: PartStream) -> Bool {
        isReversed ? b.precedes(a) : a.precedes(b)
    }

    /// The order exports write paths in: key by key (`.priority` first, then RTDB order), a parent before its
    /// children.
    static func precedes(_ a: [String], _ b: [String]) -> Bool {
        for (x, y) in zip(a, b) where !FirebaseKey.same(x, y) {
            return FirebaseKey.exportPrecedes(x, y)
        }
        return a.count < b.count
    }
}
