/// One typed column of a record table and the field of the record it holds.
///
/// Each table's layout is written once (`TreeTable.description`); the COPY column list, the import's encoder,
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
    /// The record's field the column holds, or the object field whose member it holds (`poster`).
    var key: String
    /// The member of the object field `key` the column holds (`uid` of `poster`); nil when it holds the field.
    var member: String?
    /// How the field is kept.
    var kind: Kind

    /// Whether the column holds a member of an object field rather than a field.
    var isMember: Bool { member != nil }

    /// The key the column's value has in what holds it: the member's in its object, or the field's.
    var innerKey: String { member ?? key }

    /// A column holding the record's field `key` (by default, the field named like the column), or that
    /// field's `member`.
    init(_ name: String, _ kind: Kind, key: String? = nil, member: String? = nil) {
        self.name = name
        self.key = key ?? name
        self.member = member
        self.kind = kind
    }
}

extension TreeTable {
    /// The typed columns of the table's records, in column order (after the key columns, before `extra`); empty
    /// for the tables that hold edges (`true`s) and for unmapped values.
    var recordColumns: [RecordColumn] { Self.recordColumnLists[rawValue] }

    /// Made once: import and export ask for every row.
    private static let recordColumnLists: [[RecordColumn]] = allCases.map { table in
        if case .records(let columns) = table.description.rows { return columns }
        return []
    }

    /// The record columns in runs that share their field key: a top-level field alone, or an object's members
    /// together (`poster.uid`, `poster.username`), with each column's index in the row.
    var recordFieldGroups: [(key: String, columns: [(column: RecordColumn, index: Int)])] {
        Self.fieldGroupsByTable[rawValue]
    }

    /// Made once: import and export walk them for every record.
    private static let fieldGroupsByTable = allCases.map(\.makeFieldGroups)

    private var makeFieldGroups: [(key: String, columns: [(column: RecordColumn, index: Int)])] {
        var groups: [(key: String, columns: [(column: RecordColumn, index: Int)])] = []
        for (offset, column) in recordColumns.enumerated() {
            let entry = (column: column, index: keyDepth + offset)
            if column.isMember, let last = groups.last, last.key == column.key, last.columns[0].column.isMember {
                groups[groups.count - 1].columns.append(entry)
            } else {
                groups.append((column.key, [entry]))
            }
        }
        return groups
    }
}
