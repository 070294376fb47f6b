import FirebaseTree
import PostgresClient

/// How a table's rows under a node are read in export order without sorting the table (migration 0008).
///
/// `unmapped_values` is one range of its `sort_key` index. A typed table is read as up to two streams that the
/// export merges: the rows whose keys all keep RTDB order in byte order, in primary-key order, as three ranges
/// of the first free key that skip the digit-led keys; and the rows with a key that does not
/// (`rtdb_key_needs_order`), in the order of the table's partial index on `rtdb_key_order`. A table with no
/// such row is read in primary-key order alone. Each stream reads only the rows it returns, so the first or last
/// N children of any node cost O(N) rows.
struct TableRead {
    /// The table read.
    var table: TreeTable
    /// SELECTs whose results, one after the other, are this stream's rows in reading order.
    var selects: [Query]
}

/// Children of a node selected by key, in RTDB order; either bound may be absent.
struct ChildKeyRange: Equatable {
    /// The first child key (inclusive).
    var lower: String?
    /// The last child key (inclusive).
    var upper: String?

    /// No bound: every child.
    static let all = ChildKeyRange()
}

extension TreeTable {
    /// The columns an export reads, in the importer's order (without `sort_key`, which is the order itself).
    var exportedColumns: ArraySlice<String> {
        self == .unmappedValues ? columns.prefix(5) : columns[...]
    }

    /// Columns whose size can grow with the data (text, arrays, jsonb), summed to tell large rows.
    private var growingColumns: [String] {
        switch self {
        case .users: ["username", "extra"]
        case .posts: ["image_url", "poster_uid", "poster_username", "extra"]
        case .feedPosts: ["image_file_url", "user_name", "extra"]
        case .postLikes, .followers, .following: []
        case .timeline: ["poster_uid", "extra"]
        case .chats: ["title", "member_hash", "members", "last_message", "extra"]
        case .messages: ["content", "sender_uid", "sender_username", "extra"]
        case .unmappedValues: ["string_value"]
        }
    }

    /// Rows whose growing columns hold more than this many bytes come without them; `PartStream` fetches them
    /// alone, so that a batch of rows is bounded in bytes.
    static let largeRowBytes = 1 << 16

    /// The most bytes a row read in a batch can take: a large row's columns are left out.
    var batchRowBound: Int {
        (growingColumns.isEmpty ? 0 : Self.largeRowBytes) + 1024
    }

    /// The SELECT list of a read: the key columns, the other columns unless the row is large, then whether it
    /// is not (the last column).
    private var streamColumns: String {
        let keys = self == .unmappedValues ? ["root", "path"] : keyColumns
        let others = exportedColumns.dropFirst(keys.count)
        guard !growingColumns.isEmpty else {
            return (exportedColumns.map(Query.quoted(identifier:)) + ["true"]).joined(separator: ", ")
        }
        let size = growingColumns.map { column in
            // octet_length and pg_column_size read a stored value's header, never decompress it.
            let name = Query.quoted(identifier: column)
            return column == "extra" || column == "members"
                ? "coalesce(pg_column_size(\(name)), 0)"
                : "coalesce(octet_length(\(name)), 0)"
        }.joined(separator: " + ")
        let small = "(\(size) <= \(Self.largeRowBytes))"
        return
            (keys.map(Query.quoted(identifier:))
            + others.map { "CASE WHEN \(small) THEN \(Query.quoted(identifier: $0)) END" } + [small])
            .joined(separator: ", ")
    }

    /// The statement that fetches a large row's columns (after its keys) on its own.
    func largeRowQuery(keys row: some ExportRow) throws -> Query {
        let others = exportedColumns.dropFirst(self == .unmappedValues ? 2 : keyDepth)
        var query = Query.StringInterpolation(literalCapacity: 128, interpolationCount: 2)
        query.appendLiteral("SELECT " + others.map(Query.quoted(identifier:)).joined(separator: ", ") + " FROM ")
        query.appendInterpolation(identifier: name)
        if self == .unmappedValues {
            query.appendLiteral(" WHERE root = ")
            query.appendInterpolation(row[0]!)
            query.appendLiteral(" AND path = ")
            query.appendInterpolation(Array(try UnmappedPath.keys(of: row).dropFirst()))
            query.appendLiteral("::text[]")
        } else {
            query.appendLiteral(" WHERE true")
            appendKeyConditions((0..<keyDepth).map { row[$0]! }, to: &query)
        }
        return Query(stringInterpolation: query)
    }

    /// Whether the table holds a row with a key that needs `rtdb_key_order` (answered by its partial index).
    func orderedRowsQuery() -> Query {
        Query(unsafeSQL: "SELECT EXISTS (SELECT 1 FROM \(Query.quoted(identifier: name)) WHERE \(needsOrderCondition))")
    }

    /// Whether the table holds a row with a key that byte order misplaces: an integer (or a key looking like one)
    /// or a character from U+E000 up. Digit-led text keys need `rtdb_key_order` for range reads only.
    func misorderedRowsQuery() -> Query {
        let misordered = keyColumns.map { column in
            let name = Query.quoted(identifier: column)
            return "ltrim(\(name), '-0123456789') = '' OR (octet_length(\(name)) <> length(\(name))"
                + " AND \(name) ~ '[\\uE000-\\U0010FFFF]')"
        }.joined(separator: " OR ")
        let table = Query.quoted(identifier: name)
        let condition = "(\(needsOrderCondition)) AND (\(misordered))"
        return Query(unsafeSQL: "SELECT EXISTS (SELECT 1 FROM \(table) WHERE \(condition))")
    }

    /// The partial index's predicate, verbatim, so that the planner can use the index.
    private var needsOrderCondition: String {
        keyColumns.map { "rtdb_key_needs_order(\(Query.quoted(identifier: $0)))" }.joined(separator: " OR ")
    }

    /// A key column's RTDB order, as the partial indexes hold it.
    func orderExpression(_ column: String) -> String {
        #"(rtdb_key_order(\#(Query.quoted(identifier: column))) COLLATE "C")"#
    }

    /// The reads of the rows holding part of the node at `path` (absolute, keys from the root), in export order
    /// (`reversed`: the opposite), limited to the children whose keys `children` admits. `hasOrderedRows`: the
    /// table holds a key that needs `rtdb_key_order` (`orderedRowsQuery`). Empty when the table holds nothing
    /// there.
    func reads(at path: [String], reversed: Bool, children: ChildKeyRange = .all, hasOrderedRows: Bool) -> [TableRead] {
        if self == .unmappedValues { return [unmappedRead(at: path, reversed: reversed, children: children)] }
        guard let root = rootKey else { return [] }
        let fixed: [String]
        if let first = path.first {
            guard first == root else { return [] }
            fixed = Array(path.dropFirst().prefix(keyDepth))
        } else {
            // At the root, the table's root key is the child that the bounds admit or not.
            if let lower = children.lower, FirebaseKey.exportPrecedes(root, lower) { return [] }
            if let upper = children.upper, FirebaseKey.exportPrecedes(upper, root) { return [] }
            fixed = []
        }
        // Bounds apply to the children of the node: the first free key column, when the node lies above the rows.
        let boundsApply = !path.isEmpty && fixed.count < keyDepth && children != .all
        let free = Array(keyColumns.dropFirst(fixed.count))
        var reads: [TableRead] = []
        let fixedNeedsOrder = fixed.contains(where: FirebaseKey.needsOrder)
        if !fixedNeedsOrder {
            var selects: [Query] = []
            if !hasOrderedRows || free.isEmpty {
                selects = [
                    plainSelect(
                        fixed: fixed, free: free, range: nil, bounds: boundsApply ? children : .all,
                        reversed: reversed, filters: false)
                ].compactMap { $0 }
            } else {
                let ranges = reversed ? PlainRange.allCases.reversed() : PlainRange.allCases
                selects = ranges.compactMap { range in
                    plainSelect(
                        fixed: fixed, free: free, range: range, bounds: boundsApply ? children : .all,
                        reversed: reversed, filters: true)
                }
            }
            if !selects.isEmpty { reads.append(TableRead(table: self, selects: selects)) }
        }
        if hasOrderedRows {
            reads.append(
                TableRead(
                    table: self,
                    selects: [
                        orderedSelect(
                            fixed: fixed, free: free, bounds: boundsApply ? children : .all, reversed: reversed)
                    ]))
        }
        return reads
    }

    /// The ranges of a free key column that hold every key keeping RTDB order in byte order, in byte order:
    /// below `-0`, from `-:` to `0`, from `:` on. The digit-led keys between them are read in `rtdb_key_order`.
    private enum PlainRange: CaseIterable {
        case belowNegativeDigits, dashLed, aboveDigits

        var condition: String {
            switch self {
            case .belowNegativeDigits: "< '-0'"
            case .dashLed: ">= '-:' AND %@ < '0'"
            case .aboveDigits: ">= ':'"
            }
        }
    }

    private func plainSelect(
        fixed: [String], free: [String], range: PlainRange?, bounds: ChildKeyRange, reversed: Bool, filters: Bool
    ) -> Query? {
        var query = Query.StringInterpolation(literalCapacity: 512, interpolationCount: fixed.count + 2)
        query.appendLiteral("SELECT \(streamColumns) FROM ")
        query.appendInterpolation(identifier: name)
        query.appendLiteral(" WHERE true")
        appendKeyConditions(fixed, to: &query)
        if let column = free.first.map(Query.quoted(identifier:)) {
            if let range {
                query.appendLiteral(" AND \(column) " + range.condition.replacingOccurrences(of: "%@", with: column))
            }
            // A plain key lies after every integer key and compares with a string key in byte order.
            if let lower = bounds.lower, FirebaseKey.integerValue(lower) == nil {
                query.appendLiteral(" AND \(column) >= ")
                query.appendInterpolation(lower)
            }
            if let upper = bounds.upper {
                guard FirebaseKey.integerValue(upper) == nil else { return nil }
                query.appendLiteral(" AND \(column) <= ")
                query.appendInterpolation(upper)
            }
        }
        if filters {
            for column in free {
                query.appendLiteral(" AND NOT rtdb_key_needs_order(\(Query.quoted(identifier: column)))")
            }
        }
        let order = free.map { Query.quoted(identifier: $0) + (reversed ? " DESC" : "") }
        if !order.isEmpty { query.appendLiteral(" ORDER BY " + order.joined(separator: ", ")) }
        return Query(stringInterpolation: query)
    }

    private func orderedSelect(fixed: [String], free: [String], bounds: ChildKeyRange, reversed: Bool) -> Query {
        var query = Query.StringInterpolation(literalCapacity: 512, interpolationCount: 2 * fixed.count + 2)
        query.appendLiteral("SELECT \(streamColumns) FROM ")
        query.appendInterpolation(identifier: name)
        query.appendLiteral(" WHERE (\(needsOrderCondition))")
        for (column, key) in zip(keyColumns, fixed) {
            query.appendLiteral(" AND \(orderExpression(column)) = ")
            query.appendInterpolation(FirebaseKey.order(of: key))
        }
        appendKeyConditions(fixed, to: &query)
        if let column = free.first {
            if let lower = bounds.lower {
                query.appendLiteral(" AND \(orderExpression(column)) >= ")
                query.appendInterpolation(FirebaseKey.order(of: lower))
            }
            if let upper = bounds.upper {
                query.appendLiteral(" AND \(orderExpression(column)) <= ")
                query.appendInterpolation(FirebaseKey.order(of: upper))
            }
        }
        let order = free.map { orderExpression($0) + (reversed ? " DESC" : "") }
        if !order.isEmpty { query.appendLiteral(" ORDER BY " + order.joined(separator: ", ")) }
        return Query(stringInterpolation: query)
    }

    private func unmappedRead(at path: [String], reversed: Bool, children: ChildKeyRange) -> TableRead {
        var query = Query.StringInterpolation(literalCapacity: 256, interpolationCount: 2)
        query.appendLiteral("SELECT \(streamColumns) FROM unmapped_values WHERE true")
        if !path.isEmpty || children != .all { Self.appendUnmappedRange(at: path, children: children, to: &query) }
        query.appendLiteral(reversed ? " ORDER BY sort_key DESC" : " ORDER BY sort_key")
        return TableRead(table: self, selects: [Query(stringInterpolation: query)])
    }

    /// ` AND "column" = $n` for each key the keys below the root name, outermost first.
    func appendKeyConditions(_ keys: some Sequence<String>, to query: inout Query.StringInterpolation) {
        for (column, key) in zip(keyColumns, keys) {
            query.appendLiteral(" AND ")
            query.appendInterpolation(identifier: column)
            query.appendLiteral(" = ")
            query.appendInterpolation(key)
        }
    }

    /// ` AND sort_key >= $n AND sort_key < $m`: the unmapped values at or below `path` (absolute; the root has
    /// no upper bound of its own), limited to the children `children` admits.
    static func appendUnmappedRange(
        at path: [String], children: ChildKeyRange = .all, to query: inout Query.StringInterpolation
    ) {
        let node = FirebaseKey.pathOrder(path)
        var lower = node
        var upper = path.isEmpty ? nil : FirebaseKey.pathOrderUpperBound(node)
        if let key = children.lower { lower = node + FirebaseKey.orderBytes(of: key) }
        if let key = children.upper { upper = node + FirebaseKey.orderBytes(of: key) + [2] }
        query.appendLiteral(" AND sort_key >= ")
        query.appendInterpolation(String(decoding: lower, as: UTF8.self))
        if let upper {
            query.appendLiteral(" AND sort_key < ")
            query.appendInterpolation(String(decoding: upper, as: UTF8.self))
        }
    }
}
