import FirebaseTree
import Foundation
internal import PostgresClient

extension TreeExport {
    /// `Store.childKeys`: see there.
    func childKeys(of path: [String], startingWith prefix: String, limit: Int) throws -> [String] {
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
                let column = table.keyColumns[below.count]
                try add(
                    """
                    SELECT DISTINCT \(identifier: column) FROM \(identifier: table.name)
                    WHERE \(table.keyConditions(below)) AND \(identifier: column) >= \(prefix)
                        AND \(identifier: column) < \(prefix) || chr(1114111)
                    ORDER BY 1 LIMIT \(limit)
                    """)
            }
            try add(
                """
                SELECT DISTINCT path[\(below.count + 1)] FROM unmapped_values
                WHERE root = \(root) AND cardinality(path) > \(below.count) AND path[1:\(below.count)] = \(below)
                    AND path[\(below.count + 1)] >= \(prefix) AND path[\(below.count + 1)] < \(prefix) || chr(1114111)
                ORDER BY 1 LIMIT \(limit)
                """)
        } else {
            for table in TreeTable.allCases {
                guard let root = table.rootKey, root.utf8.starts(with: prefix.utf8), !keys.contains(TreeKey(root))
                else { continue }
                if try !connection.query("SELECT \(Query.anyRow(in: table.name))")[0].decode(
                    Bool.self, at: 0)
                {
                    continue
                }
                keys.insert(TreeKey(root))
            }
            try add(
                """
                SELECT DISTINCT root FROM unmapped_values WHERE root >= \(prefix) AND root < \(prefix) || chr(1114111)
                ORDER BY 1 LIMIT \(limit)
                """)
        }
        return keys.filter { !$0.string.hasPrefix(".") }.sorted().prefix(limit).map(\.string)
    }
}
