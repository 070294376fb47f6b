import FirebaseTree
import Foundation
import PostgresClient

/// What an export wrote.
public struct ExportReport: Sendable {
    /// Rows read from the tables.
    public var rows = 0
    /// Rows the server sent (those read ahead included): what a query cost in rows.
    public var rowsFetched = 0
    /// The most bytes of row data one batch of a cursor held (rows with large values come without them).
    public var largestBatchBytes = 0
    /// JSON bytes written.
    public var bytes = 0
    /// Seconds from start to the last byte.
    public var seconds: Double = 0
    /// Tables that held keys needing RTDB's exact order, read in `rtdb_key_order` beside their primary key.
    public var sortedTables: [String] = []
    /// Bytes held at most for objects that might have been arrays while they were written.
    public var peakHeldBytes = 0
    /// Bytes such objects moved to temporary files.
    public var spilledBytes = 0
}

/// The report of an export in progress, shared by reference with the emitter's sink (which runs while the rows
/// are being read).
final class ExportTally {
    var report = ExportReport()

    /// Closes `merge` and adds what it fetched to the report.
    func close(_ merge: inout PartMerge) {
        merge.close()
        report.rowsFetched += merge.rowsFetched
        report.largestBatchBytes = max(report.largestBatchBytes, merge.largestBatchBytes)
    }
}

extension Store {
    /// Streams the whole tree as Firebase JSON to `write`, from one consistent snapshot: keys in RTDB order,
    /// numbers as JavaScript writes them, arrays and priorities as `options` say. Memory is bounded in bytes
    /// whatever the store's size, the shape of its keys or the size of its values (see `TreeEmitter` and
    /// `PartStream`).
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
        let tally = ExportTally()
        try connection.withTransaction(isolation: .repeatableRead, readOnly: true) {
            try withoutActuallyEscaping(write) { write in
                try withoutActuallyEscaping(onProgress) { onProgress in
                    let emitter = TreeEmitter(options: options) { bytes in
                        tally.report.bytes += bytes.count
                        try write(bytes)
                        onProgress(tally.report.rows)
                    }
                    try exportRows(at: path, shallow: shallow, into: emitter, tally: tally)
                    try emitter.finish()
                    tally.report.peakHeldBytes = emitter.peakFrameBytes
                    tally.report.spilledBytes = emitter.spilledBytes
                }
            }
        }
        tally.report.seconds = (clock.now - started).seconds
        return tally.report
    }

    /// Adds the rows of the node at `path` to `emitter`, in the caller's read-only transaction.
    private func exportRows(at path: [String], shallow: Bool, into emitter: TreeEmitter, tally: ExportTally) throws {
        let ordered = try tablesWithOrderedRows()
        tally.report.sortedTables = TreeTable.allCases.filter { ordered.contains($0) }.map(\.name)
        // Typed rows go straight from libpq's buffers to the JSON when nothing can still fall inside them; that
        // is nearly every row, and the rest take the general way. Tables with nothing else under their root are
        // read as COPY blocks when the merge reaches their root.
        var blocks = path.isEmpty && !shallow ? try copyBlocks(ordered: ordered) : []
        var merge = try openRows(at: path, excluding: Set(blocks.map(\.table)), ordered: ordered)
        var copying: CopyBlock?
        emitter.childCountBound = { relative in
            // During a COPY the connection is busy: the block's own count was taken before.
            if let block = copying { return relative == [block.table.rootKey!] ? block.rowCount : nil }
            try merge.collectFetchInFlight()
            return try self.childCountBound(of: path + relative)
        }
        defer { tally.close(&merge) }
        while true {
            let next = merge.next()
            if let block = blocks.first,
                next.map({ FirebaseKey.exportPrecedes(block.table.rootKey!, $0.rootKey) }) ?? true
            {
                blocks.removeFirst()
                try merge.collectFetchInFlight()
                copying = block
                try copy(block, into: emitter, tally: tally)
                copying = nil
                continue
            }
            guard let stream = next else { break }
            tally.report.rows += 1
            try Self.add(stream, below: path, shallow: shallow, mayGrow: merge.nextRowMayGrow, to: emitter)
            try merge.advance()
        }
    }

    /// At most how many children the node at `path` has: the rows under it (each child has one at least); nil
    /// for the root and for a node inside a record (small, and not worth a query).
    func childCountBound(of path: [String]) throws -> Int? {
        guard let root = path.first else { return nil }
        var total = 0
        for table in TreeTable.tables(under: root) {
            guard path.count - 1 < table.keyDepth else { return nil }
            var query = Query.StringInterpolation(literalCapacity: 64, interpolationCount: 2)
            query.appendLiteral("SELECT count(*) FROM ")
            query.appendInterpolation(identifier: table.name)
            query.appendLiteral(" WHERE true")
            table.appendKeyConditions(path.dropFirst(), to: &query)
            total += try connection.query(Query(stringInterpolation: query))[0].decode(Int.self, at: 0)
        }
        var unmapped = Query.StringInterpolation(literalCapacity: 64, interpolationCount: 2)
        unmapped.appendLiteral("SELECT count(*) FROM unmapped_values WHERE true")
        TreeTable.appendUnmappedRange(at: path, to: &unmapped)
        return total + (try connection.query(Query(stringInterpolation: unmapped))[0].decode(Int.self, at: 0))
    }

    /// The typed tables holding a key that needs `rtdb_key_order` (each asked of its partial index).
    func tablesWithOrderedRows() throws -> Set<TreeTable> {
        var tables = Set<TreeTable>()
        for table in TreeTable.allCases where table != .unmappedValues {
            if try connection.query(table.orderedRowsQuery())[0].decode(Bool.self, at: 0) { tables.insert(table) }
        }
        return tables
    }
}

/// A typed table that a whole-tree export reads with one `COPY (SELECT … ORDER BY …) TO STDOUT` instead of
/// cursors: nothing else lies under its root (no unmapped values, no other table's rows), so its rows are one run
/// of the output, in primary-key order, or sorted by `rtdb_key_order` when some key sits elsewhere in byte order.
/// COPY costs the server about half of what FETCH from a cursor does (FETCH goes through a tuplestore), but holds
/// the connection until done, so a block is read whole when the merge reaches its root.
struct CopyBlock {
    var table: TreeTable
    var statement: Query
    /// The table's rows, counted when its keys include array indexes (see `TreeEmitter.childCountBound`).
    var rowCount: Int?
}

extension Store {
    /// The tables a whole-tree export can read as `CopyBlock`s, in export order of their roots.
    fileprivate func copyBlocks(ordered: Set<TreeTable>) throws -> [CopyBlock] {
        var blocks: [CopyBlock] = []
        for table in TreeTable.allCases {
            guard let root = table.rootKey else { continue }
            guard try !connection.query("SELECT EXISTS (SELECT 1 FROM unmapped_values WHERE root = \(root))")[0]
                .decode(Bool.self, at: 0) else { continue }
            var sharesRoot = false
            for other in TreeTable.tables(under: root) where other != table {
                sharesRoot = try connection.query("SELECT EXISTS (SELECT 1 FROM \(identifier: other.name))")[0]
                    .decode(Bool.self, at: 0)
                if sharesRoot { break }
            }
            guard !sharesRoot else { continue }
            // The whole-table SELECT has no parameters (COPY takes none), only quoted identifiers and constants.
            let columns = table.exportedColumns.map(Query.quoted(identifier:)).joined(separator: ", ")
            // Keys that byte order misplaces (integers, characters from U+E000) make the block sort by RTDB order;
            // digit-led text keys alone do not.
            let sorts = try ordered.contains(table) && connection.query(table.misorderedRowsQuery())[0].decode(Bool.self, at: 0)
            let order = table.keyColumns.map { sorts ? table.orderExpression($0) : Query.quoted(identifier: $0) }
                .joined(separator: ", ")
            let select = "SELECT \(columns) FROM \(Query.quoted(identifier: table.name)) ORDER BY \(order)"
            let rowCount = sorts ? try connection.query("SELECT count(*) FROM \(identifier: table.name)")[0].decode(Int.self, at: 0) : nil
            blocks.append(CopyBlock(table: table, statement: Query(unsafeSQL: "COPY (\(select)) TO STDOUT"), rowCount: rowCount))
        }
        return blocks.sorted { FirebaseKey.exportPrecedes($0.table.rootKey!, $1.table.rootKey!) }
    }

    /// Writes a block's rows as a whole-tree export does.
    fileprivate func copy(_ block: CopyBlock, into emitter: TreeEmitter, tally: ExportTally) throws {
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
            tally.report.rows += 1
            tally.report.rowsFetched += 1
        }
    }
}

extension Store {
    /// Adds the row `stream` is on to an export of the node at `path`: straight from the row's text when it is a
    /// typed row that nothing later falls inside (`mayGrow` false), else as a tree part.
    static func add(
        _ stream: PartStream, below path: [String], shallow: Bool, mayGrow: Bool, to emitter: TreeEmitter
    ) throws {
        let row = stream.currentRow!
        if !shallow, !mayGrow, stream.parentPath.count >= path.count, !stream.parentPath.isEmpty {
            let parent = path.isEmpty ? stream.parentPath : Array(stream.parentPath[path.count...])
            if stream.table != .unmappedValues {
                if try emitter.addDirectly(row, of: stream.table, under: parent) { return }
            } else if !stream.nextRowMayLieBelow {
                let written = try UnmappedPath.withLastKey(of: row) { key in
                    try emitter.addDirectly(key: key, under: parent) { TreeTable.writeUnmappedValue(of: row, to: &$0) }
                }
                if written == true { return }
            }
        }
        let rowPath = stream.currentPath!
        if shallow {
            for (key, value) in try shallowParts(of: stream, at: rowPath, below: path) {
                try emitter.add(key.map { [$0] } ?? [], value)
            }
        } else if rowPath.count < path.count {
            // A record holding the node asked for: only that part of it.
            if let value = try stream.table.part(from: row).value?.descendant(at: path[rowPath.count...]) {
                try emitter.add([], value)
            }
        } else if let value = try stream.table.part(from: row).value {
            try emitter.add(Array(rowPath[path.count...]), value)
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

    /// The rows holding part of the node at `path`, in export order (`reversed`: from the last), limited to the
    /// children `children` admits, merged from the tables' reads in the caller's read-only transaction. Close the
    /// merge when done with it. `ordered`: `tablesWithOrderedRows()`.
    func openRows(
        at path: [String], reversed: Bool = false, children: ChildKeyRange = .all, excluding excluded: Set<TreeTable> = [],
        ordered: Set<TreeTable>
    ) throws -> PartMerge {
        let shared = PartStream.Shared()
        var streams: [PartStream] = []
        for table in TreeTable.allCases where !excluded.contains(table) {
            for read in table.reads(at: path, reversed: reversed, children: children, hasOrderedRows: ordered.contains(table)) {
                streams.append(PartStream(read, connection: connection, shared: shared))
            }
        }
        do {
            return try PartMerge(streams: streams, reversed: reversed, shared: shared, connection: connection)
        } catch {
            if shared.inFlight != nil { connection.drainResults() }
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
                  let leaf = try stream.table.part(from: stream.currentRow!).value, leaf.children == nil,
                  rowPath.count == path.count + 1 || rowPath.last == FirebaseKey.value
            else { return [(child, .bool(true))] }
            return [(child, leaf)]
        }
        guard let node = try stream.table.part(from: stream.currentRow!).value?.descendant(at: path[rowPath.count...])
        else { return [] }
        guard let children = node.children else { return [(nil, node)] }
        return children.filter { !$0.key.hasPrefix(".") }
            .sorted { PartMerge.precedes([$0.key.string], [$1.key.string]) }
            .map { key, value in (key.string, value.children == nil ? value : value[FirebaseKey.value] ?? .bool(true)) }
    }
}

extension Store {
    /// Keys of the children of the node at `path` that start with `prefix`, in byte order, at most `limit`
    /// (console completion of Firebase paths). Each table is asked with an index range, never scanned whole.
    public func childKeys(of path: [String], startingWith prefix: String, limit: Int) throws -> [String] {
        var keys = Set<TreeKey>()
        func add(_ query: Query) throws {
            for row in try connection.query(query) { keys.insert(TreeKey(try row.decode(String.self, at: 0))) }
        }
        let below = Array(path.dropFirst())
        if let root = path.first {
            for table in TreeTable.tables(under: root) {
                guard below.count < table.keyDepth else {
                    // Inside a record: its node is small.
                    var json: [UInt8] = []
                    _ = try exportTree(at: path, shallow: true) { json.append(contentsOf: $0) }
                    let children = try StorageError.converting {
                        try TreeValue.parse(json: String(decoding: json, as: UTF8.self))?.children ?? [:]
                    }
                    keys.formUnion(children.keys.filter { $0.string.utf8.starts(with: prefix.utf8) })
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
                guard let root = table.rootKey, root.utf8.starts(with: prefix.utf8), !keys.contains(TreeKey(root)) else { continue }
                if try !connection.query("SELECT EXISTS (SELECT 1 FROM \(identifier: table.name))")[0].decode(Bool.self, at: 0) {
                    continue
                }
                keys.insert(TreeKey(root))
            }
            try add("""
                SELECT DISTINCT root FROM unmapped_values WHERE root >= \(prefix) AND root < \(prefix) || chr(1114111)
                ORDER BY 1 LIMIT \(limit)
                """)
        }
        return keys.filter { !$0.string.hasPrefix(".") }.sorted().prefix(limit).map(\.string)
    }
}
