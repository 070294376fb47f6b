import Foundation

/// What an export wrote.
public struct ExportReport: Sendable {
    /// Rows read from the tables.
    public var rows = 0
    /// JSON bytes written.
    public var bytes = 0
    /// Seconds from start to the last byte.
    public var seconds: Double = 0
    /// Tables that held keys needing RTDB's exact order, read with a sort instead of in index order.
    public var sortedTables: [String] = []
}

extension Store {
    /// Streams the whole tree as Firebase JSON to `write`, from one consistent snapshot: keys in RTDB order,
    /// numbers as JavaScript writes them, arrays and priorities as `options` say. Memory holds one record and a
    /// batch of rows per table, whatever the store's size.
    ///
    /// ```swift
    /// try store.exportTree { bytes in try file.write(contentsOf: bytes) }
    /// ```
    ///
    /// `path` (keys from the root, `["posts", uid]`) exports only the node there, as `firebase database:get`
    /// prints it: a subtree, a leaf, or `null` when nothing is there.
    /// `shallow`, as the REST API's `shallow=true`: a leaf as it is, an object with each child's value replaced
    /// by `true` unless that child is a leaf.
    /// `onProgress` hears the number of rows read each time a chunk is written.
    public func exportTree(
        at path: [String] = [], options: JSONTextWriter.Options = .init(), shallow: Bool = false,
        onProgress: (_ rows: Int) -> Void = { _ in }, to write: (UnsafeBufferPointer<UInt8>) throws -> Void
    ) throws -> ExportReport {
        let clock = ContinuousClock()
        let started = clock.now
        var report = ExportReport()
        try connection.withTransaction(isolation: .repeatableRead, readOnly: true) {
            var emitter = TreeEmitter(options: options)
            // Typed rows of a whole-tree export go straight from libpq's buffers to the JSON when nothing can
            // still fall inside them; that is nearly every row, and the rest take the general way. Tables with
            // nothing else under their root are read as COPY blocks when the merge reaches their root.
            let writesRowsDirectly = path.isEmpty && !shallow
            var blocks = writesRowsDirectly ? try copyBlocks(report: &report) : []
            var merge = try openRows(at: path, excluding: Set(blocks.map(\.table)), report: &report)
            defer { merge.close() }
            while true {
                let next = merge.next()
                if let block = blocks.first,
                    next.map({ FirebaseKey.exportPrecedes(block.table.rootKey!, $0.rootKey) }) ?? true
                {
                    blocks.removeFirst()
                    try merge.collectFetchInFlight()
                    try copy(block, into: &emitter, report: &report, onProgress: onProgress, to: write)
                    continue
                }
                guard let stream = next else { break }
                let mayWriteDirectly = writesRowsDirectly && stream.table != .unmappedValues && !merge.nextRowMayGrow
                if try !mayWriteDirectly || !emitter.addDirectly(stream.currentRow, of: stream.table, under: stream.parentPath) {
                    try Self.add(stream, below: path, shallow: shallow, to: &emitter)
                }
                report.rows += 1
                if emitter.bufferedByteCount >= 1 << 18 {
                    try emitter.drain { report.bytes += $0.count; try write($0) }
                    onProgress(report.rows)
                }
                try merge.advance()
            }
            try emitter.finish()
            try emitter.drain { report.bytes += $0.count; try write($0) }
        }
        report.seconds = (clock.now - started).seconds
        return report
    }
}

/// A typed table that a whole-tree export reads with one `COPY (SELECT … ORDER BY …) TO STDOUT` instead of a
/// cursor: nothing else lies under its root (no unmapped values, no other table's rows), so its rows are one run
/// of the output. COPY costs the server about half of what FETCH from a cursor does (FETCH goes through a
/// tuplestore), but holds the connection until done, so a block is read whole when the merge reaches its root.
struct CopyBlock {
    var table: TreeTable
    var statement: Query
}

extension Store {
    /// The tables a whole-tree export can read as `CopyBlock`s, in export order of their roots.
    fileprivate func copyBlocks(report: inout ExportReport) throws -> [CopyBlock] {
        var blocks: [CopyBlock] = []
        for table in TreeTable.allCases {
            guard let root = table.rootKey else { continue }
            guard try !connection.query("SELECT EXISTS (SELECT FROM unmapped_values WHERE root = \(root))")[0]
                .decode(Bool.self, at: 0) else { continue }
            var sharesRoot = false
            for other in TreeTable.tables(under: root) where other != table {
                sharesRoot = try connection.query("SELECT EXISTS (SELECT FROM \(identifier: other.name))")[0]
                    .decode(Bool.self, at: 0)
                if sharesRoot { break }
            }
            guard !sharesRoot else { continue }
            let exact = try connection.query(table.reorderCheckQuery()).first?.decode(Bool.self, at: 0) ?? false
            if exact { report.sortedTables.append(table.name) }
            // The whole-table SELECT has no parameters (COPY takes none), only quoted identifiers and constants.
            let select = table.exportQuery(exactOrder: exact)!
            precondition(select.binds.isEmpty)
            blocks.append(CopyBlock(table: table, statement: Query(unsafeSQL: "COPY (\(select.sql)) TO STDOUT")))
        }
        return blocks.sorted { FirebaseKey.exportPrecedes($0.table.rootKey!, $1.table.rootKey!) }
    }

    /// Writes a block's rows as a whole-tree export does, handing each chunk of JSON to `write`.
    fileprivate func copy(
        _ block: CopyBlock, into emitter: inout TreeEmitter, report: inout ExportReport,
        onProgress: (_ rows: Int) -> Void, to write: (UnsafeBufferPointer<UInt8>) throws -> Void
    ) throws {
        var row = CopyRow()
        var parent: [String] = []
        let table = block.table
        try connection.copyOut(block.statement) { line in
            row.read(line)
            do {
                parent = try table.parentPath(of: row, reusing: parent).parent
                if try !emitter.addDirectly(row, of: table, under: parent) {
                    let part = try table.part(from: row)
                    if let value = part.value { try emitter.add(part.path, value) }
                }
            } catch let error as StorageError {
                throw error.adding(context: "exporting \(table.name)")
            }
            report.rows += 1
            if emitter.bufferedByteCount >= 1 << 18 {
                try emitter.drain { report.bytes += $0.count; try write($0) }
                onProgress(report.rows)
            }
        }
    }
}

extension Store {
    /// Adds the row `stream` is on to an export of the node at `path`, building its part as a tree.
    fileprivate static func add(_ stream: PartStream, below path: [String], shallow: Bool, to emitter: inout TreeEmitter) throws {
        let rowPath = stream.currentPath!
        if shallow {
            for (key, value) in try shallowParts(of: stream, at: rowPath, below: path) {
                try emitter.add(key.map { [$0] } ?? [], value)
            }
        } else if rowPath.count < path.count {
            // A record holding the node asked for: only that part of it.
            if let value = try stream.table.part(from: stream.currentRow).value?.descendant(at: path[rowPath.count...]) {
                try emitter.add([], value)
            }
        } else if stream.table == .unmappedValues {
            if let value = try stream.table.part(from: stream.currentRow).value {
                try emitter.add(Array(rowPath[path.count...]), value)
            }
        } else {
            try emitter.add(path.isEmpty ? rowPath : Array(rowPath[path.count...]), .row(stream.table, stream.currentRow))
        }
    }
}

extension Store {
    /// About how many rows the tree's tables hold, from the planner's statistics (instant on any size; exact
    /// only after ANALYZE).
    public func estimatedRowCount() throws -> Int {
        let names = Store.treeTables
        return try connection.query("""
            SELECT coalesce(sum(greatest(reltuples, 0)), 0)::bigint FROM pg_class
            WHERE relname = ANY(\(names)::text[]) AND relnamespace = current_schema()::regnamespace
            """)[0].decode(Int.self, at: 0)
    }

    /// The rows holding part of the node at `path`, in export order (`reversed`: from the last), merged from
    /// one cursor per table in the caller's read-only transaction. Close the merge when done with it.
    func openRows(
        at path: [String], reversed: Bool = false, excluding excluded: Set<TreeTable> = [], report: inout ExportReport
    ) throws -> PartMerge {
        var streams: [PartStream] = []
        let inFlight = PartStream.InFlight()
        for table in TreeTable.allCases where !excluded.contains(table) {
            let exact = try connection.query(table.reorderCheckQuery()).first?.decode(Bool.self, at: 0) ?? false
            let cursor = "export_\(table.name)"
            guard let declare = table.exportQuery(
                exactOrder: exact, under: path, reversed: reversed,
                prefix: "DECLARE \(Query.quoted(identifier: cursor)) NO SCROLL CURSOR FOR ")
            else { continue }
            if exact { report.sortedTables.append(table.name) }
            try connection.execute(declare)
            streams.append(PartStream(table: table, cursor: cursor, connection: connection, inFlight: inFlight))
        }
        do {
            return try PartMerge(streams: streams, reversed: reversed, inFlight: inFlight, connection: connection)
        } catch {
            if inFlight.stream != nil { connection.drainResults() }
            throw error
        }
    }

    /// What a row adds to a shallow read of the node at `path`, in export order: the children it holds (a key and
    /// `true`, or the child's value when that is a leaf, without its priority), or the node's own value (nil key)
    /// when the node is a leaf.
    fileprivate static func shallowParts(of stream: PartStream, at rowPath: [String], below path: [String])
        throws -> [(key: String?, value: TreeValue)]
    {
        guard rowPath.count <= path.count else {
            // The row is a child or lies below one; only unmapped leaves can make that child a leaf.
            let child = rowPath[path.count]
            // Shallow reads leave priorities out, the node's own included.
            guard !child.hasPrefix(".") else { return [] }
            guard stream.table == .unmappedValues, rowPath.count <= path.count + 2,
                  let leaf = try stream.table.part(from: stream.currentRow).value, leaf.children == nil,
                  rowPath.count == path.count + 1 || rowPath.last == FirebaseKey.value
            else { return [(child, .bool(true))] }
            return [(child, leaf)]
        }
        guard let node = try stream.table.part(from: stream.currentRow).value?.descendant(at: path[rowPath.count...])
        else { return [] }
        guard let children = node.children else { return [(nil, node)] }
        return children.filter { !$0.key.hasPrefix(".") }
            .sorted { PartMerge.precedes([$0.key], [$1.key]) }
            .map { key, value in (key, value.children == nil ? value : value[FirebaseKey.value] ?? .bool(true)) }
    }
}

/// One table's rows in RTDB order, fetched from a cursor in batches. The next batch is requested as soon as one
/// arrives, so the server reads it while this process writes JSON; one request is in flight per connection.
final class PartStream {
    let table: TreeTable
    private let cursor: String
    private let connection: Connection
    private var batch: QueryResult?
    private var index = 0
    private var isExhausted = false
    /// The row `advance()` moved to; nil after the last row.
    private(set) var currentRow: Row!
    /// The row's path without its last key (root first), shared with the rows before while it stays the same.
    private(set) var parentPath: [String] = []
    /// The row's last key, once decoded.
    private var leaf: String?
    private let inFlight: InFlight
    private var prefetched: QueryResult?
    private static let batchSize = 5000

    /// The one stream whose FETCH the connection is running, shared by the streams of one export.
    final class InFlight {
        var stream: PartStream?
    }

    /// Where the table's root key falls among the typed tables' roots in export order (nil for unmapped values):
    /// rows of two tables under different roots compare by this alone.
    private let rootRank: Int?

    init(table: TreeTable, cursor: String, connection: Connection, inFlight: InFlight) {
        self.table = table
        rootRank = table.rootKey.map { root in
            Set(TreeTable.allCases.compactMap(\.rootKey)).filter { FirebaseKey.exportPrecedes($0, root) }.count
        }
        self.cursor = cursor
        self.connection = connection
        self.inFlight = inFlight
    }

    private var fetch: Query {
        Query(unsafeSQL: "FETCH FORWARD \(Self.batchSize) FROM \(Query.quoted(identifier: cursor))")
    }

    /// Collects the FETCH in flight on the connection, whichever stream it belongs to.
    fileprivate func settle() throws {
        guard let owner = inFlight.stream else { return }
        inFlight.stream = nil
        owner.prefetched = try connection.receive(owner.fetch)
    }

    /// Moves to the next row.
    func advance() throws {
        leaf = nil
        if batch == nil || index >= batch!.count {
            currentRow = nil
            guard !isExhausted else { return }
            if prefetched == nil, inFlight.stream !== self {
                try settle()
                try connection.sendWithoutWaiting(fetch)
                inFlight.stream = self
            }
            if inFlight.stream === self { try settle() }
            batch = prefetched
            prefetched = nil
            index = 0
            if batch!.count < Self.batchSize {
                isExhausted = true
            } else {
                try settle()
                try connection.sendWithoutWaiting(fetch)
                inFlight.stream = self
            }
            guard batch!.count > 0 else { return }
        }
        currentRow = batch![index]
        index += 1
        do {
            (parentPath, leaf) = try table.parentPath(of: currentRow, reusing: parentPath)
        } catch let error as StorageError {
            throw error.adding(context: "exporting \(table.name)")
        }
    }

    /// The row's last key.
    var leafKey: String {
        if let leaf { return leaf }
        let key = currentRow[table.keyDepth - 1]!
        leaf = key
        return key
    }

    /// Whether `advance()` is on a row.
    var hasRow: Bool { currentRow != nil }

    /// The top-level key the row lies under.
    var rootKey: String { parentPath.first ?? leafKey }

    /// The row's path from the root; nil after the last row.
    var currentPath: [String]? {
        currentRow == nil ? nil : parentPath + [leafKey]
    }

    /// Whether this row's path comes before `other`'s in export order (see `PartMerge.precedes`), comparing the
    /// shared parent paths first so that the last keys are decoded only when those are equal.
    func precedes(_ other: PartStream) -> Bool {
        if let rootRank, let otherRank = other.rootRank, rootRank != otherRank { return rootRank < otherRank }
        let mine = parentPath
        let theirs = other.parentPath
        for depth in 0..<min(mine.count, theirs.count) where mine[depth] != theirs[depth] {
            return FirebaseKey.exportPrecedes(mine[depth], theirs[depth])
        }
        if mine.count == theirs.count { return FirebaseKey.exportPrecedes(leafKey, other.leafKey) }
        if mine.count < theirs.count {
            let key = leafKey
            return key == theirs[mine.count] || FirebaseKey.exportPrecedes(key, theirs[mine.count])
        }
        let key = other.leafKey
        return mine[theirs.count] != key && FirebaseKey.exportPrecedes(mine[theirs.count], key)
    }

    /// Whether `other`'s row lies at or below this row's path.
    func contains(_ other: PartStream) -> Bool {
        if let rootRank, let otherRank = other.rootRank, rootRank != otherRank { return false }
        let mine = parentPath
        let theirs = other.parentPath
        guard theirs.count >= mine.count, mine.first == theirs.first, theirs.starts(with: mine) else { return false }
        return (theirs.count == mine.count ? other.leafKey : theirs[mine.count]) == leafKey
    }
}

/// Merges the tables' row streams into one sequence in export path order. Streams mostly run long (one table
/// after another), so the current stream's next row is compared with the runner-up only.
struct PartMerge {
    private let streams: [PartStream]
    private let isReversed: Bool
    private let inFlight: PartStream.InFlight
    private let connection: Connection
    private var best: Int?
    private var runnerUp: Int?

    init(streams: [PartStream], reversed: Bool, inFlight: PartStream.InFlight, connection: Connection) throws {
        self.streams = streams
        self.inFlight = inFlight
        self.connection = connection
        isReversed = reversed
        for stream in streams { try stream.advance() }
        rank()
    }

    /// The stream positioned on the next row; nil after the last.
    func next() -> PartStream? {
        best.map { streams[$0] }
    }

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
        try inFlight.stream?.settle()
    }

    /// Collects a FETCH still in flight (when reading stopped early or failed), so that the connection can run
    /// the next statement.
    func close() {
        if inFlight.stream != nil {
            connection.drainResults()
            inFlight.stream = nil
        }
    }

    /// Whether `a`'s row is merged out before `b`'s.
    private func comesFirst(_ a: PartStream, _ b: PartStream) -> Bool {
        isReversed ? b.precedes(a) : a.precedes(b)
    }

    /// The order exports write paths in: key by key (`.priority` first, then RTDB order), a parent before its
    /// children.
    static func precedes(_ a: [String], _ b: [String]) -> Bool {
        for (x, y) in zip(a, b) where x != y {
            return FirebaseKey.exportPrecedes(x, y)
        }
        return a.count < b.count
    }
}

extension Store {
    /// Keys of the children of the node at `path` that start with `prefix`, in byte order, at most `limit`
    /// (console completion of Firebase paths). Each table is asked with an index range, never scanned whole.
    public func childKeys(of path: [String], startingWith prefix: String, limit: Int) throws -> [String] {
        var keys = Set<String>()
        func add(_ query: Query) throws {
            for row in try connection.query(query) { keys.insert(try row.decode(String.self, at: 0)) }
        }
        let below = Array(path.dropFirst())
        if let root = path.first {
            for table in TreeTable.tables(under: root) {
                guard below.count < table.keyDepth else {
                    // Inside a record: its node is small.
                    var json: [UInt8] = []
                    _ = try exportTree(at: path, shallow: true) { json.append(contentsOf: $0) }
                    let children = try TreeValue.parse(json: String(decoding: json, as: UTF8.self))?.children ?? [:]
                    keys.formUnion(children.keys.filter { $0.hasPrefix(prefix) })
                    break
                }
                var query = Query.StringInterpolation(literalCapacity: 128, interpolationCount: below.count + 3)
                let column = table.keyColumns[below.count]
                query.appendLiteral("SELECT DISTINCT ")
                query.appendInterpolation(identifier: column)
                query.appendLiteral(" FROM ")
                query.appendInterpolation(identifier: table.name)
                query.appendLiteral(" WHERE true")
                table.appendKeyConditions(below, to: &query)
                query.appendLiteral(" AND ")
                query.appendInterpolation(identifier: column)
                query.appendLiteral(" >= ")
                query.appendInterpolation(prefix)
                query.appendLiteral(" AND ")
                query.appendInterpolation(identifier: column)
                query.appendLiteral(" < ")
                query.appendInterpolation(prefix)
                query.appendLiteral(" || chr(1114111) ORDER BY 1 LIMIT ")
                query.appendInterpolation(limit)
                try add(Query(stringInterpolation: query))
            }
            try add("""
                SELECT DISTINCT path[\(below.count + 1)] FROM unmapped_values
                WHERE root = \(root) AND cardinality(path) > \(below.count) AND path[1:\(below.count)] = \(below)::text[]
                    AND path[\(below.count + 1)] >= \(prefix) AND path[\(below.count + 1)] < \(prefix) || chr(1114111)
                ORDER BY 1 LIMIT \(limit)
                """)
        } else {
            for table in TreeTable.allCases {
                guard let root = table.rootKey, root.hasPrefix(prefix), !keys.contains(root) else { continue }
                if try !connection.query("SELECT EXISTS (SELECT FROM \(identifier: table.name))")[0].decode(Bool.self, at: 0) {
                    continue
                }
                keys.insert(root)
            }
            try add("""
                SELECT DISTINCT root FROM unmapped_values WHERE root >= \(prefix) AND root < \(prefix) || chr(1114111)
                ORDER BY 1 LIMIT \(limit)
                """)
        }
        return Array(keys.filter { !$0.hasPrefix(".") }.sorted().prefix(limit))
    }
}
