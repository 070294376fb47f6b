import FirebaseTree
internal import PostgresClient

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
        switch description.rows {
        case .edges:
            return ([root, try row.text(0), try row.text(1)], .bool(true))
        case .records:
            func field(_ column: RecordColumn, at index: Int) throws -> TreeValue? {
                switch column.kind {
                case .text: text(index)
                case .number, .integer: try number(index)
                case .keys: try row.textArray(index).flatMap { keys in object(keys.map { ($0, TreeValue.bool(true)) }) }
                }
            }
            let value = object(
                try recordFieldGroups.map { group in
                    guard group.columns[0].column.isMember else {
                        return (group.key, try field(group.columns[0].column, at: group.columns[0].index))
                    }
                    return (
                        group.key,
                        object(try group.columns.map { ($0.column.innerKey, try field($0.column, at: $0.index)) })
                    )
                })
            return ([root] + (try (0..<keyDepth).map { try row.text($0) }), try withExtra(value, column: extraColumn))
        case .unmappedLeaves:
            let path = try UnmappedPath.keys(of: row)
            let value: TreeValue? =
                if let text = row[UnmappedColumn.stringValue.rawValue] {
                    .string(text)
                } else if let number = try number(UnmappedColumn.numberValue.rawValue) {
                    number
                } else {
                    row[UnmappedColumn.booleanValue.rawValue].map { .bool($0 == "t") }
                }
            return (path, value)
        }
    }
}

/// A typed field as the record writes it, its key quoted once (field names are ASCII and need no escapes).
///
/// Its names live as long as the process (`ProcessBytes`): every row of an export reads them, on several threads
/// at once, and a reference-counted name would be retained and released per row on a cache line the threads
/// share.
private enum RecordField {
    case text(name: UnsafeBufferPointer<UInt8>, column: Int)
    case number(name: UnsafeBufferPointer<UInt8>, column: Int)
    /// An object of text fields (`poster`, `sender`).
    case object(name: UnsafeBufferPointer<UInt8>, members: UnsafeBufferPointer<RecordMember>)
    /// A text array whose elements are the keys of an object of `true`s (a chat's `members`).
    case keys(name: UnsafeBufferPointer<UInt8>, column: Int)
}

/// A text field inside a record's object field.
private struct RecordMember {
    var name: UnsafeBufferPointer<UInt8>
    var column: Int
}

extension TreeTable {
    /// The record's fields in RTDB key order (the names are ASCII, so byte order), for rows without `extra`;
    /// nil for tables that always take the general path. Made once: export asks twice per row.
    private var recordFields: UnsafeBufferPointer<RecordField>? { Self.recordFieldsByTable[rawValue] }

    /// Immutable after its one initialization, and its elements are never freed (`ProcessBytes`).
    private nonisolated(unsafe) static let recordFieldsByTable = ProcessBytes.keep(
        allCases.map { $0.makeRecordFields.map(ProcessBytes.keep) })

    /// `recordColumns` sorted as a record writes them.
    private var makeRecordFields: [RecordField]? {
        guard !recordColumns.isEmpty else { return nil }
        func quoted(_ name: String) -> UnsafeBufferPointer<UInt8> { ProcessBytes.keep(Array(name.utf8)) }
        func byName<T>(_ items: [T], _ name: (T) -> String) -> [T] {
            items.sorted { name($0).utf8.lexicographicallyPrecedes(name($1).utf8) }
        }
        return byName(recordFieldGroups, \.key).map { group in
            let (column, index) = group.columns[0]
            if column.isMember {
                precondition(group.columns.allSatisfy { $0.column.kind == .text }, "object members are text")
                return .object(
                    name: quoted(group.key),
                    members: ProcessBytes.keep(
                        byName(group.columns) { $0.column.innerKey }.map {
                            RecordMember(name: quoted($0.column.innerKey), column: $0.index)
                        })
                )
            }
            switch column.kind {
            case .text: return .text(name: quoted(group.key), column: index)
            case .number, .integer: return .number(name: quoted(group.key), column: index)
            case .keys: return .keys(name: quoted(group.key), column: index)
            }
        }
    }

    private var extraColumn: Int { columns.count - 1 }

    /// Writes an unmapped value's leaf straight from its row's text.
    static func writeUnmappedValue(of row: some ExportRow, to writer: inout JSONTextWriter) {
        let string = UnmappedColumn.stringValue.rawValue
        if row.withText(string, { text in text.map { writer.string(utf8: $0) } }) != nil { return }
        let number = UnmappedColumn.numberValue.rawValue
        if row.withText(number, { text in text.map { writer.number(postgresText: $0) } }) != nil { return }
        writer.bool(row.hasText(UnmappedColumn.booleanValue.rawValue, equalTo: "t"))
    }

    /// Whether `writeValue` can write the row straight from libpq's buffers: edges, and records whose `extra`
    /// is NULL and that hold something. Other rows take the general path, `part(from:)`.
    func writesDirectly(_ row: some ExportRow) -> Bool {
        if isLeaf { return true }
        guard let fields = recordFields, row.isNull(extraColumn) else { return false }
        return fields.contains { field in
            switch field {
            case .text(_, let column), .number(_, let column): !row.isNull(column)
            case .object(_, let members): members.contains { !row.isNull($0.column) }
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
                    writer.key(plain: name)
                    writer.string(utf8: text)
                }
            case .number(let name, let column):
                row.withText(column) { text in
                    guard let text else { return }
                    writer.key(plain: name)
                    writer.number(postgresText: text)
                }
            case .object(let name, let members):
                guard members.contains(where: { !row.isNull($0.column) }) else { continue }
                writer.key(plain: name)
                writer.beginObject()
                for member in members {
                    row.withText(member.column) { text in
                        guard let text else { return }
                        writer.key(plain: member.name)
                        writer.string(utf8: text)
                    }
                }
                writer.endObject()
            case .keys(let name, let column):
                let keys = row.withText(column) { $0.flatMap(ArrayLiteral.parse(utf8:)) }?.compactMap { $0 } ?? []
                guard !keys.isEmpty else { continue }
                writer.key(plain: name)
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
        path.append(rootKey ?? "")
        for column in 0..<(keyDepth - 1) {
            path.append(
                shared && row.hasText(column, equalTo: previous[column + 1])
                    ? previous[column + 1] : try row.text(column))
        }
        return (path, nil)
    }
}
