import FirebaseTree
import PostgresClient

/// How each table's rows become tree parts.
extension TreeTable {
    /// The tree part a row stands for: its path from the root and its subtree (nil when the row holds nothing).
    func part(from row: some ExportRow) throws -> (path: [String], value: TreeValue?) {
        func text(_ column: Int) -> TreeValue? { row[column].map(TreeValue.string) }
        func number(_ column: Int) throws -> TreeValue? {
            guard let text = row[column] else { return nil }
            guard let value = Double(text) else {
                throw StorageError(.decoding, "\(name) holds a number PostgreSQL wrote as \"\(text)\"")
            }
            return .number(value)
        }
        func object(_ fields: [(String, TreeValue?)]) -> TreeValue? {
            var children: [TreeKey: TreeValue] = [:]
            for (key, value) in fields { children[TreeKey(key)] = value }
            return children.isEmpty ? nil : .object(children)
        }
        func withExtra(_ value: TreeValue?, column: Int) throws -> TreeValue? {
            // `extra` is a partial subtree: `{".priority": 1}` alone is a record's priority, not an empty node.
            guard let json = row[column],
                let extra = try StorageError.converting({ try TreeValue.parse(json: json, normalizing: false) })
            else {
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
            let members = try row.textArray(4).flatMap { keys in
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
            let path = try UnmappedPath.keys(of: row)
            let value: TreeValue? =
                if let text = row[2] { .string(text) } else if let number = try number(3) { number } else {
                    row[4].map { .bool($0 == "t") }
                }
            return (path, value)
        }
    }
}

/// A typed column as the record writes it.
private enum RecordField {
    case text(StaticString, Int)
    case number(StaticString, Int)
    /// An object of text fields (`poster`, `sender`).
    case object(StaticString, [(StaticString, Int)])
    /// A text array whose elements are the keys of an object of `true`s (a chat's `members`).
    case keys(StaticString, Int)
}

extension TreeTable {
    /// The record's fields in RTDB key order (the names are ASCII, so byte order), for rows without `extra`;
    /// nil for tables that always take the general path. Made once: export asks twice per row.
    private var recordFields: [RecordField]? { Self.recordFieldsByTable[rawValue] }

    private static let recordFieldsByTable = allCases.map(\.makeRecordFields)

    private var makeRecordFields: [RecordField]? {
        switch self {
        case .users: [.text("username", 1)]
        case .posts:
            [
                .number("created_at", 4), .number("image_height", 3), .text("image_url", 2), .number("like_count", 5),
                .object("poster", [("uid", 6), ("username", 7)]),
            ]
        case .feedPosts: [.text("imageFileURL", 1), .number("timestamp", 4), .text("user", 2), .number("votes", 3)]
        case .timeline: [.text("poster_uid", 2)]
        case .messages:
            [.text("content", 2), .object("sender", [("uid", 4), ("username", 5)]), .number("timestamp", 3)]
        case .chats:
            [
                .text("lastMessage", 5), .number("lastMessageSent", 6), .text("memberHash", 3), .keys("members", 4),
                .text("title", 2),
            ]
        case .postLikes, .followers, .following, .unmappedValues: nil
        }
    }

    private var extraColumn: Int { columns.count - 1 }

    /// Writes an unmapped value's leaf straight from its row's text.
    static func writeUnmappedValue(of row: some ExportRow, to writer: inout JSONTextWriter) {
        if row.withText(2, { text in text.map { writer.string(utf8: $0) } }) != nil { return }
        if row.withText(3, { text in text.map { writer.number(postgresText: $0) } }) != nil { return }
        writer.bool(row.hasText(4, equalTo: "t"))
    }

    /// Whether `writeValue` can write the row straight from libpq's buffers: edges, and records whose `extra`
    /// is NULL and that hold something. Other rows take the general path, `part(from:)`.
    func writesDirectly(_ row: some ExportRow) -> Bool {
        switch self {
        case .postLikes, .followers, .following: return true
        default: break
        }
        guard let fields = recordFields, row.isNull(extraColumn) else { return false }
        return fields.contains { field in
            switch field {
            case .text(_, let column), .number(_, let column): !row.isNull(column)
            case .object(_, let members): members.contains { !row.isNull($0.1) }
            case .keys(_, let column): row.withText(column) { ($0?.count ?? 0) > 2 }
            }
        }
    }

    /// Writes a row's value without building a tree; only for rows `writesDirectly` accepts.
    func writeValue(of row: some ExportRow, to writer: inout JSONTextWriter) {
        guard let fields = recordFields else { return writer.bool(true) }
        writer.beginObject()
        for field in fields {
            switch field {
            case .text(let name, let column):
                row.withText(column) { text in
                    guard let text else { return }
                    writer.key(name)
                    writer.string(utf8: text)
                }
            case .number(let name, let column):
                row.withText(column) { text in
                    guard let text else { return }
                    writer.key(name)
                    writer.number(postgresText: text)
                }
            case .object(let name, let members):
                guard members.contains(where: { !row.isNull($0.1) }) else { continue }
                writer.key(name)
                writer.beginObject()
                for (member, column) in members {
                    row.withText(column) { text in
                        guard let text else { return }
                        writer.key(member)
                        writer.string(utf8: text)
                    }
                }
                writer.endObject()
            case .keys(let name, let column):
                let keys = row.withText(column) { $0.flatMap(ArrayLiteral.parse(utf8:)) }?.compactMap { $0 } ?? []
                guard !keys.isEmpty else { continue }
                writer.key(name)
                writer.beginObject()
                var previous: TreeKey?
                for key in keys.sorted(by: FirebaseKey.precedes) where TreeKey(key) != previous {
                    writer.key(key)
                    writer.bool(true)
                    previous = TreeKey(key)
                }
                writer.endObject()
            }
        }
        writer.endObject()
    }

    /// The path of a row (root, then its key columns) without its last key, and that key when it is at hand
    /// (unmapped values; a typed row's last key stays in libpq's buffer until asked for). `previous` is the row
    /// before's parent path, of the same table: consecutive rows mostly share their parent keys, and then that
    /// array is returned as it is, without decoding a key or allocating.
    func parentPath(of row: some ExportRow, reusing previous: [String]) throws -> (parent: [String], leaf: String?) {
        if self == .unmappedValues { return try UnmappedPath.parent(of: row, reusing: previous) }
        let shared = previous.count == keyDepth
        if shared, (1..<keyDepth).allSatisfy({ row.hasText($0 - 1, equalTo: previous[$0]) }) { return (previous, nil) }
        var path: [String] = []
        path.reserveCapacity(keyDepth)
        path.append(rootKey!)
        for column in 0..<(keyDepth - 1) {
            path.append(
                shared && row.hasText(column, equalTo: previous[column + 1]) ? previous[column + 1] : row[column]!)
        }
        return (path, nil)
    }
}
