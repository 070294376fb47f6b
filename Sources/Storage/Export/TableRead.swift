import FirebaseTree
internal import PostgresClient

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
    /// Only these children (by their bytes), when given: the records a transaction of the mirror rewrites.
    var keys: [String]?

    /// No bound: every child.
    static let all = ChildKeyRange()
}

extension TreeTable {
    /// The columns an export reads, in the importer's order (without `sort_key`, which is the order itself).
    var exportedColumns: ArraySlice<String> {
        self == .unmappedValues ? columns.prefix(UnmappedColumn.sortKey.rawValue) : columns[...]
    }

    /// Columns whose size can grow with the data (text, arrays, jsonb), summed to tell large rows.
    private var growingColumns: [String] {
        switch description.rows {
        case .unmappedLeaves: [UnmappedColumn.stringValue.name]
        case .edges: []
        case .records(let columns): columns.filter { $0.kind == .text || $0.kind == .keys }.map(\.name) + ["extra"]
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
    private var streamColumns: Query {
        let keys = self == .unmappedValues ? Self.unmappedKeyColumns : keyColumns
        let others = exportedColumns.dropFirst(keys.count)
        guard !growingColumns.isEmpty else {
            return Query.identifiers(exportedColumns) + ", true"
        }
        let size = growingColumns.map { column -> Query in
            // octet_length and pg_column_size read a stored value's header, never decompress it.
            column == "extra" || column == "members"
                ? "coalesce(pg_column_size(\(identifier: column)), 0)"
                : "coalesce(octet_length(\(identifier: column)), 0)"
        }.joined(separator: " + ")
        let small: Query = "(\(size) <= \(Self.largeRowBytes))"
        let columns =
            keys.map { "\(identifier: $0)" as Query }
            + others.map { "CASE WHEN \(small) THEN \(identifier: $0) END" as Query } + [small]
        return columns.joined(separator: ", ")
    }

    /// An unmapped value's key: its root and its path below it.
    private static let unmappedKeyColumns = [UnmappedColumn.root.name, UnmappedColumn.path.name]

    /// The statement that fetches a large row's columns (after its keys) on its own.
    func largeRowQuery(keys row: some ExportRow) throws -> Query {
        let others = exportedColumns.dropFirst(self == .unmappedValues ? Self.unmappedKeyColumns.count : keyDepth)
        let columns = Query.identifiers(others)
        if self == .unmappedValues {
            let path = Array(try UnmappedPath.keys(of: row).dropFirst())
            return
                "SELECT \(columns) FROM unmapped_values WHERE root = \(try row.text(UnmappedColumn.root.rawValue)) AND path = \(path)"
        }
        return
            "SELECT \(columns) FROM \(identifier: name) WHERE \(keyConditions(try (0..<keyDepth).map { try row.text($0) }))"
    }

    /// Whether the table holds a row with a key that needs `rtdb_key_order`; with `fixed` (the first key columns'
    /// values), a row under that node. Its partial index answers either from one range however large the node
    /// (the node's rows in key order, as the ordered read takes them), and on Citus one shard answers the second.
    func orderedRowsQuery(under fixed: [String] = []) -> Query {
        "SELECT \(Query.anyRow(in: name, where: orderedRowsConditions(fixed: fixed).joined(separator: " AND ")))"
    }

    /// The rows under the node whose first key columns hold `fixed` that need `rtdb_key_order`, in terms of the
    /// partial index: its predicate verbatim, and each fixed key's order as well as its text.
    private func orderedRowsConditions(fixed: [String]) -> [Query] {
        var conditions: [Query] = ["(\(needsOrderCondition))"]
        conditions += zip(keyColumns, fixed).map { column, key in
            "\(orderExpression(column)) = \(FirebaseKey.order(of: key))"
        }
        if !fixed.isEmpty { conditions.append(keyConditions(fixed)) }
        return conditions
    }

    /// Whether the table holds a row with a key that byte order misplaces: an integer (or a key looking like one)
    /// or a character from U+E000 up. Digit-led text keys need `rtdb_key_order` for range reads only. The key-order
    /// index ends with this very condition (migration 0020), so the btree answers it without reading a row.
    func misorderedRowsQuery() -> Query {
        "SELECT \(Query.anyRow(in: name, where: misorderedCondition))"
    }

    /// The condition of `misorderedRowsQuery` on a row of the table (or of one of its shards).
    var misorderedCondition: Query {
        let misplaced = keyColumns.map { "rtdb_key_misplaced(\(identifier: $0))" as Query }.joined(separator: " OR ")
        return "(\(needsOrderCondition)) AND (\(misplaced))"
    }

    /// The partial index's predicate, verbatim, so that the planner can use the index.
    var needsOrderCondition: Query {
        keyColumns.map { "rtdb_key_needs_order(\(identifier: $0))" as Query }.joined(separator: " OR ")
    }

    /// The key columns as a whole-table read's `ORDER BY` lists them: by their bytes, or with `rtdbOrder` by their
    /// `rtdb_key_order` (no parameters: COPY takes it too).
    func keyOrder(rtdbOrder: Bool) -> Query {
        keyColumns.map { rtdbOrder ? orderExpression($0) : "\(identifier: $0)" }.joined(separator: ", ")
    }

    /// A key column's RTDB order, as the partial indexes hold it (no parameters: COPY takes it too).
    func orderExpression(_ column: String) -> Query {
        "(rtdb_key_order(\(identifier: column)) COLLATE \"C\")"
    }

    /// The reads of the rows holding part of the node at `path` (absolute, keys from the root), in export order
    /// (`reversed`: the opposite), limited to the children whose keys `children` admits. `hasOrderedRows`: the
    /// table holds a key that needs `rtdb_key_order` (`orderedRowsQuery`). Empty when the table holds nothing
    /// there.
    func reads(at path: [String], reversed: Bool, children: ChildKeyRange = .all, hasOrderedRows: Bool)
        -> [TableRead]
    {
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
            if let keys = children.keys, !keys.contains(where: { FirebaseKey.same($0, root) }) { return [] }
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

        func condition(on column: String) -> Query {
            switch self {
            case .belowNegativeDigits: "\(identifier: column) < '-0'"
            case .dashLed: "\(identifier: column) >= '-:' AND \(identifier: column) < '0'"
            case .aboveDigits: "\(identifier: column) >= ':'"
            }
        }

        /// Whether no key from `lower` to `upper` (inclusive, in byte order) lies in the range: its statement is
        /// then left out (on Citus each statement asks every shard).
        func excludes(lower: String?, upper: String?) -> Bool {
            let (from, below): (String?, String?) =
                switch self {
                case .belowNegativeDigits: (nil, "-0")
                case .dashLed: ("-:", "0")
                case .aboveDigits: (":", nil)
                }
            if let lower, let below, !Array(lower.utf8).lexicographicallyPrecedes(Array(below.utf8)) { return true }
            if let upper, let from, Array(upper.utf8).lexicographicallyPrecedes(Array(from.utf8)) { return true }
            return false
        }
    }

    private func plainSelect(
        fixed: [String], free: [String], range: PlainRange?, bounds: ChildKeyRange, reversed: Bool, filters: Bool
    ) -> Query? {
        var conditions = [keyConditions(fixed)]
        if let column = free.first {
            // A plain key lies after every integer key and compares with a string key in byte order.
            let lower = bounds.lower.flatMap { FirebaseKey.integerValue($0) == nil ? $0 : nil }
            if let upper = bounds.upper, FirebaseKey.integerValue(upper) != nil { return nil }
            if let range {
                if range.excludes(lower: lower, upper: bounds.upper) { return nil }
                conditions.append(range.condition(on: column))
            }
            if let lower { conditions.append("\(identifier: column) >= \(lower)") }
            if let upper = bounds.upper { conditions.append("\(identifier: column) <= \(upper)") }
            if let keys = bounds.keys { conditions.append("\(identifier: column) = ANY(\(keys)::text[])") }
        }
        if filters { conditions += free.map { "NOT rtdb_key_needs_order(\(identifier: $0))" } }
        return select(where: conditions, orderedBy: free.map { "\(identifier: $0)" }, reversed: reversed)
    }

    private func orderedSelect(fixed: [String], free: [String], bounds: ChildKeyRange, reversed: Bool) -> Query {
        var conditions = orderedRowsConditions(fixed: fixed)
        if let column = free.first {
            if let lower = bounds.lower {
                conditions.append("\(orderExpression(column)) >= \(FirebaseKey.order(of: lower))")
            }
            if let upper = bounds.upper {
                conditions.append("\(orderExpression(column)) <= \(FirebaseKey.order(of: upper))")
            }
            if let keys = bounds.keys { conditions.append("\(identifier: column) = ANY(\(keys)::text[])") }
        }
        return select(where: conditions, orderedBy: free.map(orderExpression), reversed: reversed)
    }

    /// A read's SELECT: the rows that meet every condition, ordered by the terms (descending when `reversed`).
    private func select(where conditions: [Query], orderedBy terms: [Query], reversed: Bool) -> Query {
        let select: Query =
            "SELECT \(streamColumns) FROM \(identifier: name) WHERE \(conditions.joined(separator: " AND "))"
        guard !terms.isEmpty else { return select }
        let direction: Query = reversed ? " DESC" : ""
        return select + " ORDER BY \(terms.map { "\($0)\(direction)" as Query }.joined(separator: ", "))"
    }

    private func unmappedRead(at path: [String], reversed: Bool, children: ChildKeyRange) -> TableRead {
        let range = path.isEmpty && children == .all ? "true" : Self.unmappedRange(at: path, children: children)
        let query: Query = """
            SELECT \(streamColumns) FROM unmapped_values WHERE \(range) \
            ORDER BY sort_key \(reversed ? "DESC" : "ASC" as Query)
            """
        return TableRead(table: self, selects: [query])
    }

    /// `"column" = $n AND …` for each key the keys below the root name, outermost first (`true` for none).
    func keyConditions(_ keys: some Sequence<String>) -> Query {
        let conditions = zip(keyColumns, keys).map { column, key in "\(identifier: column) = \(key)" as Query }
        return conditions.isEmpty ? "true" : conditions.joined(separator: " AND ")
    }

    /// `sort_key >= $n AND sort_key < $m`: the unmapped values at or below `path` (absolute; the root has no
    /// upper bound of its own), limited to the children `children` admits.
    static func unmappedRange(at path: [String], children: ChildKeyRange = .all) -> Query {
        let node = FirebaseKey.pathOrder(path)
        var lower = node
        var upper = path.isEmpty ? nil : FirebaseKey.pathOrderUpperBound(node)
        if let key = children.lower { lower = node + FirebaseKey.orderBytes(of: key) }
        if let key = children.upper { upper = node + FirebaseKey.orderBytes(of: key) + [2] }
        var range: Query = "sort_key >= \(String(decoding: lower, as: UTF8.self))"
        if let upper { range = range + " AND sort_key < \(String(decoding: upper, as: UTF8.self))" }
        guard let keys = children.keys else { return range }
        // Each child's own range, as the bounds above make one.
        let lowers = keys.map { String(decoding: node + FirebaseKey.orderBytes(of: $0), as: UTF8.self) }
        let uppers = keys.map { String(decoding: node + FirebaseKey.orderBytes(of: $0) + [2], as: UTF8.self) }
        return range
            + " AND EXISTS (SELECT 1 FROM unnest(\(lowers)::text[], \(uppers)::text[]) AS c(lower, upper)"
            + " WHERE sort_key >= c.lower AND sort_key < c.upper)"
    }
}
