import FirebaseTree
internal import PostgresClient

/// The rows that hold the tree at a path, as the table descriptions place them: what import, the write verbs
/// and `get` ask of the store's layout.
struct TreeRows {
    /// The connection that asks.
    let connection: StoreConnection

    /// The path of a stored record that holds `path` inside it (`/posts/UID/KEY` for `/posts/UID/KEY/poster`),
    /// or is it when `orIs`, if there is one.
    func recordPath(holding path: [String], orIs: Bool = false) throws -> [String]? {
        guard let root = path.first else { return nil }
        for table in TreeTable.tables(under: root) where path.count - 1 > table.keyDepth - (orIs ? 1 : 0) {
            let query: Query = "SELECT \(Query.anyRow(in: table.name, where: table.keyConditions(path.dropFirst())))"
            if try connection.query(query)[0].decode(Bool.self, at: 0) {
                return Array(path.prefix(table.keyDepth + 1))
            }
        }
        return nil
    }

    /// `recordPath(holding:)` of each of `paths`, in a statement per table that could hold some rather than one
    /// per path and table: the mirror asks it of every node a transaction changes.
    func recordPaths(holding paths: [[String]]) throws -> [[String]?] {
        var found: [[String]?] = Array(repeating: nil, count: paths.count)
        var byRoot: [TreeKey: [Int]] = [:]
        for (index, path) in paths.enumerated() {
            if let root = path.first { byRoot[TreeKey(root), default: []].append(index) }
        }
        for (root, indexes) in byRoot {
            for table in TreeTable.tables(under: root.string) {
                // The paths still unplaced that lie inside a record of this table, by the record's keys.
                let inside = indexes.filter { found[$0] == nil && paths[$0].count - 1 > table.keyDepth }
                guard !inside.isEmpty, table.keyDepth > 0 else { continue }
                let columns = Array(table.keyColumns.prefix(table.keyDepth))
                let keys = Query.identifiers(columns)
                let arrays: Query = columns.indices.map { column in
                    "\(inside.map { paths[$0][1 + column] })::text[]" as Query
                }.joined(separator: ", ")
                let rows = try connection.query(
                    "SELECT \(keys) FROM \(identifier: table.name) WHERE (\(keys)) IN (SELECT * FROM unnest(\(arrays)))"
                )
                var held: Set<[TreeKey]> = []
                for row in rows {
                    held.insert(try columns.indices.map { TreeKey(try row.decode(String.self, at: $0)) })
                }
                for index in inside where held.contains(paths[index][1...table.keyDepth].map { TreeKey($0) }) {
                    found[index] = Array(paths[index].prefix(table.keyDepth + 1))
                }
            }
        }
        return found
    }

    /// Deletes the leaves stored at `path` and at each of its ancestors below the root: the values a write below
    /// them replaces. A leaf is an unmapped value or a typed row that holds `true` alone (a like, a follow);
    /// records are objects and stay. Returns the number of rows deleted.
    func deleteLeaves(atAndAbove path: [String]) throws -> Int {
        guard let root = path.first else { return 0 }
        var deleted = 0
        for depth in 0..<path.count {
            let below = Array(path.dropFirst().prefix(depth))
            // A leaf with a priority is stored as `.value` and `.priority`; the priority stays, as the SDKs keep it.
            deleted += try connection.execute(
                """
                DELETE FROM unmapped_values WHERE root = \(root) AND (path = \(below) OR path = \(below + [FirebaseKey.value]))
                """)
            for table in TreeTable.tables(under: root) where table.isLeaf && table.keyDepth == below.count {
                deleted += try connection.execute(
                    "DELETE FROM \(identifier: table.name) WHERE \(table.keyConditions(below))")
            }
        }
        return deleted
    }

    /// How many rows are stored at or below an absolute Firebase path, per table (what `deleteRows(under:)`
    /// would delete).
    func rowCounts(under path: [String]) throws -> [TreeTable: Int] {
        guard let root = path.first else { return [:] }
        let below = Array(path.dropFirst())
        var counts: [TreeTable: Int] = [:]
        for table in TreeTable.tables(under: root) where below.count <= table.keyDepth {
            counts[table] = try connection.query(
                "SELECT count(*) FROM \(identifier: table.name) WHERE \(table.keyConditions(below))")[0].decode(
                    Int.self, at: 0)
        }
        counts[.unmappedValues] = try connection.query(
            "SELECT count(*) FROM unmapped_values WHERE \(TreeTable.unmappedRange(at: path))")[0].decode(
                Int.self, at: 0)
        return counts.filter { $0.value > 0 }
    }

    /// Deletes every row stored at or below an absolute Firebase path; returns the counts per table.
    func deleteRows(under path: [String]) throws -> [TreeTable: Int] {
        guard let root = path.first else { return [:] }
        let below = Array(path.dropFirst())
        var deleted: [TreeTable: Int] = [:]
        for table in TreeTable.tables(under: root) where below.count <= table.keyDepth {
            deleted[table, default: 0] += try connection.execute(
                "DELETE FROM \(identifier: table.name) WHERE \(table.keyConditions(below))")
        }
        deleted[.unmappedValues, default: 0] += try connection.execute(
            "DELETE FROM unmapped_values WHERE \(TreeTable.unmappedRange(at: path))")
        return deleted
    }

    /// Deletes every row stored at or below each of `paths` (absolute, none the root), a statement per table
    /// and depth rather than per path; returns how many rows went under each top-level key. Paths may overlap.
    func deleteRows(underAll paths: [[String]]) throws -> [String: Int] {
        var deleted: [String: Int] = [:]
        // By root (its bytes: "é" and "e\u{301}" are two nodes) and depth: the keys below the root.
        var groups: [TreeKey: [Int: [[String]]]] = [:]
        for path in paths {
            guard let root = path.first else { continue }
            groups[TreeKey(root), default: [:]][path.count - 1, default: []].append(Array(path.dropFirst()))
        }
        for (rootKey, byDepth) in groups {
            for (depth, belows) in byDepth {
                try deleteRows(under: rootKey.string, depth: depth, belows, counting: &deleted)
            }
        }
        return deleted
    }

    /// Deletes the rows at or below `/root/below` for each of `belows`, all `depth` keys long.
    private func deleteRows(
        under root: String, depth: Int, _ belows: [[String]], counting deleted: inout [String: Int]
    ) throws {
        for table in TreeTable.tables(under: root) where depth <= table.keyDepth {
            let columns = table.keyColumns.prefix(depth)
            let arrays = columns.indices.map { index in belows.map { $0[index] } }
            let condition: Query =
                depth == 0
                ? "true"
                : "(\(Query.identifiers(columns))) IN (SELECT * FROM unnest("
                    + arrays.map { "\($0)::text[]" as Query }.joined(separator: ", ") + "))"
            deleted[root, default: 0] += try connection.execute(
                "DELETE FROM \(identifier: table.name) WHERE \(condition)")
        }
        let bounds = belows.map { below in
            let node = FirebaseKey.pathOrder([root] + below)
            return (
                String(decoding: node, as: UTF8.self),
                String(decoding: FirebaseKey.pathOrderUpperBound(node), as: UTF8.self)
            )
        }
        deleted[root, default: 0] += try connection.execute(
            """
            DELETE FROM unmapped_values u USING unnest(\(bounds.map(\.0))::text[], \(bounds.map(\.1))::text[]) AS r(lower, upper)
            WHERE u.sort_key >= r.lower AND u.sort_key < r.upper
            """)
    }

    /// Locks the tree's tables against writes (`SHARE ROW EXCLUSIVE`, which conflicts with itself and with the
    /// app's inserts, updates and deletes, not with reads) for the rest of the transaction, so that a merge or a
    /// write replaces what the store holds as one serializable step. A deadlock with an app transaction that
    /// held one table and wanted another is retried.
    func lockTree() throws {
        for attempt in 1... {
            do {
                return try connection.withTransaction {
                    try connection.execute("LOCK TABLE \(TreeTable.lockList) IN SHARE ROW EXCLUSIVE MODE")
                }
            } catch let error as StorageError where error.sqlState == .deadlockDetected && attempt < 5 {
                continue
            }
        }
    }

    /// The top-level keys the store holds: the roots of the typed tables that hold a row, and those of the
    /// unmapped values.
    func topLevelKeys() throws -> [String] {
        var keys: Set<String> = []
        for table in TreeTable.allCases {
            guard let root = table.rootKey, !keys.contains(root) else { continue }
            if try !connection.query("SELECT 1 FROM \(identifier: table.name) LIMIT 1").isEmpty { keys.insert(root) }
        }
        for row in try connection.query("SELECT DISTINCT root FROM unmapped_values") {
            keys.insert(try row.decode(String.self, at: 0))
        }
        return keys.sorted()
    }

    /// Whether no table of the tree holds a row; quick on any size. Asked table by table, stopping at the first
    /// that holds one (users, in a store that holds anything): on Citus each question is a statement to every
    /// shard, and one statement asking them all ran each (ten rounds of the shards, 100-240 ms). Outside a
    /// transaction the questions share one snapshot.
    func isEmpty() throws -> Bool {
        let ask = { [connection] in
            for table in TreeTable.names
            where try connection.query("SELECT \(Query.anyRow(in: table))")[0].decode(Bool.self, at: 0) {
                return false
            }
            return true
        }
        if connection.isInTransaction { return try ask() }
        return try connection.withTransaction(isolation: .repeatableRead, readOnly: true, ask)
    }
}
