import FirebaseTree
import Foundation
internal import PostgresClient

/// A distributed table's rows read from the nodes that hold its shards (`ShardSessions`), in the order of one
/// `ORDER BY` of its key columns over the whole table: the rows, and their order, that a `COPY` of the table
/// through the coordinator gives.
///
/// Each node sends its shards of the table as one `COPY`, merged in key order on the node (its shards' primary-key
/// scans under a Merge Append, or a sort where RTDB order is asked), all nodes at once; the merge here takes the
/// least row of the nodes' streams, one at a time. Keys compare as the `ORDER BY` compares them: their bytes
/// (the key columns are `COLLATE "C"`), or their `rtdb_key_order`, which `FirebaseKey.appendOrder` writes byte
/// for byte. Rows with equal keys (a like's rows, one per owner of its post key) come out next to each other.
struct ShardMerge {
    let table: TreeTable
    /// Whether the rows are ordered by `rtdb_key_order` of each key column rather than by their bytes.
    let sortsByRTDBOrder: Bool

    /// Passes each row, in order, to `body`; the row is valid only during the call. When this throws, the nodes'
    /// sessions may be in the middle of a COPY: they are of no further use.
    func forEachRow(from shards: ShardSessions, _ body: (inout CopyRow) throws -> Void) throws {
        var streams: [NodeStream] = []
        for node in shards.nodes {
            guard let tableShards = node.shards[table], !tableShards.isEmpty else { continue }
            try node.session.beginCopyOut(statement(reading: tableShards))
            streams.append(NodeStream(session: node.session))
        }
        let keyColumns = table.keyColumns.count
        for index in streams.indices { try streams[index].advance(keyColumns: keyColumns, rtdb: sortsByRTDBOrder) }
        while true {
            var least: Int?
            for index in streams.indices where !streams[index].isDone {
                if let current = least, !streams[index].precedes(streams[current]) { continue }
                least = index
            }
            guard let least else { return }
            try body(&streams[least].row)
            try streams[least].advance(keyColumns: keyColumns, rtdb: sortsByRTDBOrder)
        }
    }

    /// One node's `COPY` of its shards of the table, in the merge's order. No parameters (COPY takes none): quoted
    /// identifiers and the order's constants alone.
    private func statement(reading shards: [ShardPlan.Shard]) -> Query {
        let columns = Query.identifiers(table.exportedColumns)
        let order = table.keyOrder(rtdbOrder: sortsByRTDBOrder)
        return
            "COPY (SELECT \(columns) FROM (\(Self.scans(of: shards, columns: columns))) AS shards ORDER BY \(order)) TO STDOUT"
    }

    /// `columns` of every row of `shards`, one table: a `UNION ALL` of their scans, into which the planner pushes
    /// a condition or an order on the columns (each shard's own index serving it).
    static func scans(of shards: [ShardPlan.Shard], columns: Query) -> Query {
        shards.map { "SELECT \(columns) FROM \(identifier: $0.schema).\(identifier: $0.name)" as Query }
            .joined(separator: " UNION ALL ")
    }
}

/// A node's stream of rows and the sort key of its current one: the key columns' bytes (or their RTDB order's),
/// each ended by a 0 byte, which no key holds, so that the keys compare column by column as `ORDER BY` does.
private struct NodeStream {
    let session: StoreConnection
    var row = CopyRow()
    var key: [UInt8] = []
    var isDone = false

    init(session: StoreConnection) {
        self.session = session
    }

    /// Reads the next row, or notes the end.
    mutating func advance(keyColumns: Int, rtdb: Bool) throws {
        guard let line = try session.nextCopyOutRow() else {
            isDone = true
            return
        }
        row.read(line)
        key.removeAll(keepingCapacity: true)
        for column in 0..<keyColumns {
            try row.withText(column) { text in
                guard let text else {
                    throw StorageError(.decoding, "a key column of an exported row is NULL, which the schema forbids")
                }
                if rtdb { FirebaseKey.appendOrder(of: text, to: &key) } else { key.append(contentsOf: text) }
            }
            key.append(0)
        }
    }

    /// Whether this stream's row sorts before `other`'s.
    func precedes(_ other: NodeStream) -> Bool {
        key.withUnsafeBufferPointer { a in
            other.key.withUnsafeBufferPointer { b in
                let common = min(a.count, b.count)
                guard common > 0, let x = a.baseAddress, let y = b.baseAddress else { return a.count < b.count }
                let order = memcmp(x, y, common)
                return order != 0 ? order < 0 : a.count < b.count
            }
        }
    }
}
