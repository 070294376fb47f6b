/// One typed column of a record table and the field of the record it holds.
///
/// Each table's layout is written once (`TreeTable.recordColumns`); the COPY column list, the import's encoder,
/// the export's decoder and its direct writer are derived from it, so a new field is one line there plus a
/// migration that adds the column.
struct RecordColumn {
    /// How the field is kept.
    enum Kind {
        /// A string.
        case text
        /// A number, as `double precision`.
        case number
        /// A number that a `bigint` holds exactly: an integer within ±2^53 (other numbers stay in `extra`).
        case integer
        /// An object of `true`s, as the `text[]` of its keys (a chat's `members`).
        case keys
    }

    /// The column's name.
    var name: String
    /// The field's path in the record: one key, or an object's key and the member's (`poster`, `uid`).
    var field: [String]
    /// How the field is kept.
    var kind: Kind

    /// A column holding the record's field `field` (by default, the field named like the column).
    init(_ name: String, _ kind: Kind, field: String...) {
        self.name = name
        self.field = field.isEmpty ? [name] : field
        self.kind = kind
    }
}

extension TreeTable {
    /// The typed columns of the table's records, in column order (after the key columns, before `extra`); empty
    /// for the tables that hold edges (`true`s) and for unmapped values.
    var recordColumns: [RecordColumn] { Self.recordLayouts[rawValue] }

    /// Indexed by raw value, which is the case's index.
    private static let recordLayouts: [[RecordColumn]] = allCases.map { table in
        switch table {
        case .users: [.init("username", .text)]
        case .posts:
            [
                .init("image_url", .text), .init("image_height", .number), .init("created_at", .number),
                .init("like_count", .integer), .init("poster_uid", .text, field: "poster", "uid"),
                .init("poster_username", .text, field: "poster", "username"),
            ]
        case .feedPosts:
            [
                .init("image_file_url", .text, field: "imageFileURL"), .init("user_name", .text, field: "user"),
                .init("votes", .integer), .init("timestamp_ms", .number, field: "timestamp"),
            ]
        case .timeline: [.init("poster_uid", .text)]
        case .chats:
            [
                .init("title", .text), .init("member_hash", .text, field: "memberHash"), .init("members", .keys),
                .init("last_message", .text, field: "lastMessage"),
                .init("last_message_sent", .number, field: "lastMessageSent"),
            ]
        case .messages:
            [
                .init("content", .text), .init("timestamp", .number),
                .init("sender_uid", .text, field: "sender", "uid"),
                .init("sender_username", .text, field: "sender", "username"),
            ]
        case .postLikes, .followers, .following, .unmappedValues: []
        }
    }

    /// The record columns in runs that share their first field key: a top-level field alone, or an object's
    /// members together (`poster.uid`, `poster.username`), with each run's first column's index in the row.
    var recordFieldGroups: [(key: String, columns: [(column: RecordColumn, index: Int)])] {
        Self.fieldGroupsByTable[rawValue]
    }

    /// Made once: import and export walk them for every record.
    private static let fieldGroupsByTable = allCases.map(\.makeFieldGroups)

    private var makeFieldGroups: [(key: String, columns: [(column: RecordColumn, index: Int)])] {
        var groups: [(key: String, columns: [(column: RecordColumn, index: Int)])] = []
        for (offset, column) in recordColumns.enumerated() {
            let entry = (column: column, index: keyDepth + offset)
            if column.field.count == 2, let last = groups.last, last.key == column.field[0],
                last.columns[0].column.field.count == 2
            {
                groups[groups.count - 1].columns.append(entry)
            } else {
                groups.append((column.field[0], [entry]))
            }
        }
        return groups
    }
}
