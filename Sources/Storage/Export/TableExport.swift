/// How each table is read back into tree parts: its SELECT in RTDB order and the part each row becomes.
extension TreeTable {
    /// The columns an export selects, in the order `part(from:)` reads them.
    private var exportColumns: [String] { columns }

    /// The SELECT that lists the table's rows in RTDB path order: in index order when `isExact` is false (no
    /// key that could sort differently), else by the exact sort keys of migration 0002.
    func exportQuery(exactOrder: Bool) -> Query {
        let columns = exportColumns.map(Query.quoted(identifier:)).joined(separator: ", ")
        let order: String
        if self == .unmappedValues {
            order = exactOrder
                ? #"rtdb_key_sort(root) COLLATE "C", rtdb_path_sort(path) COLLATE "C""#
                : "root, path"
        } else {
            order = keyColumns.map { exactOrder ? #"rtdb_key_sort(\#(Query.quoted(identifier: $0))) COLLATE "C""# : Query.quoted(identifier: $0) }
                .joined(separator: ", ")
        }
        return Query(unsafeSQL: "SELECT \(columns) FROM \(Query.quoted(identifier: name)) ORDER BY \(order)")
    }

    /// Whether the table holds a key whose RTDB order may differ from byte order (answered by a partial index).
    func reorderCheckQuery() -> Query {
        let condition: String
        if self == .unmappedValues {
            condition = "rtdb_key_may_reorder(root) OR root = '.priority' OR rtdb_path_may_reorder(path)"
        } else {
            condition = keyColumns.map { "rtdb_key_may_reorder(\(Query.quoted(identifier: $0)))" }
                .joined(separator: " OR ")
        }
        return Query(unsafeSQL: "SELECT EXISTS (SELECT 1 FROM \(Query.quoted(identifier: name)) WHERE \(condition))")
    }

    /// The tree part a row stands for: its path from the root and its subtree (nil when the row holds nothing).
    func part(from row: Row) throws -> (path: [String], value: TreeValue?) {
        func text(_ column: Int) -> TreeValue? { row[column].map(TreeValue.string) }
        func number(_ column: Int) throws -> TreeValue? {
            guard let text = row[column] else { return nil }
            guard let value = Double(text) else {
                throw StorageError(.decoding, "\(name) holds a number PostgreSQL wrote as \"\(text)\"")
            }
            return .number(value)
        }
        func object(_ fields: [(String, TreeValue?)]) -> TreeValue? {
            var children: [String: TreeValue] = [:]
            for (key, value) in fields { children[key] = value }
            return children.isEmpty ? nil : .object(children)
        }
        func withExtra(_ value: TreeValue?, column: Int) throws -> TreeValue? {
            // `extra` is a partial subtree: `{".priority": 1}` alone is a record's priority, not an empty node.
            guard let json = row[column], let extra = try TreeValue.parse(json: json, normalizing: false) else {
                return value
            }
            return value.map { $0.merging(extra) } ?? extra
        }
        let root = rootKey ?? ""
        switch self {
        case .users:
            return ([root, row[0]!], try withExtra(object([("username", text(1))]), column: 2))
        case .posts:
            let poster = object([("uid", text(6)), ("username", text(7))])
            let value = object([
                ("image_url", text(2)), ("image_height", try number(3)), ("created_at", try number(4)),
                ("like_count", try number(5)), ("poster", poster),
            ])
            return ([root, row[0]!, row[1]!], try withExtra(value, column: 8))
        case .feedPosts:
            let value = object([
                ("imageFileURL", text(1)), ("user", text(2)), ("votes", try number(3)), ("timestamp", try number(4)),
            ])
            return ([root, row[0]!], try withExtra(value, column: 5))
        case .postLikes, .followers, .following:
            return ([root, row[0]!, row[1]!], .bool(true))
        case .timeline:
            return ([root, row[0]!, row[1]!], try withExtra(object([("poster_uid", text(2))]), column: 3))
        case .chats:
            let members = try row.decode([String]?.self, at: 4).flatMap { keys in
                object(keys.map { ($0, TreeValue.bool(true)) })
            }
            let value = object([
                ("title", text(2)), ("memberHash", text(3)), ("members", members), ("lastMessage", text(5)),
                ("lastMessageSent", try number(6)),
            ])
            return ([root, row[0]!, row[1]!], try withExtra(value, column: 7))
        case .messages:
            let sender = object([("uid", text(4)), ("username", text(5))])
            let value = object([("content", text(2)), ("timestamp", try number(3)), ("sender", sender)])
            return ([root, row[0]!, row[1]!], try withExtra(value, column: 6))
        case .unmappedValues:
            let path = [row[0]!] + (try row.decode([String].self, at: 1))
            let value: TreeValue? =
                if let text = row[2] { .string(text) }
                else if let number = try number(3) { number }
                else { row[4].map { .bool($0 == "t") } }
            return (path, value)
        }
    }
}
