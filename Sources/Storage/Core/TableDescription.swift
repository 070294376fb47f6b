/// One table of the store, described once: its place in the tree, its keys, what a row holds, where Citus
/// puts it, the lookup kept from its keys and the key its repairs are batched by. The import's routing and
/// encoding, the export's reads, the name lists, the held records, the distribution plan and the repair batches
/// are all derived from these values (`TreeTable.description`), so a new table is one value and a migration.
struct TableDescription {
    /// What a row of the table holds.
    enum Rows {
        /// One record per key path: its typed columns, after the keys and before `extra` (the fields the
        /// columns do not hold, as JSON).
        case records([RecordColumn])
        /// A `true` per key path (a like, a follow); the row is its keys.
        case edges
        /// Leaves no typed table maps, each with its own root and path (`UnmappedColumn`).
        case unmappedLeaves
    }

    /// The table's name.
    var name: String
    /// The top-level node the rows live under; nil for `unmapped_values`, whose rows name their own.
    var root: String?
    /// The key columns that address a row below the root, outermost first.
    var keyColumns: [String]
    /// What a row holds.
    var rows: Rows
    /// Where Citus puts the rows.
    var placement: TablePlacement
    /// The lookup of who holds which key, for tables whose records are held per user under the root.
    var lookup: LookupDescription? = nil
    /// The column whose values a batched repair divides into ranges (`Repair.batchTable`); nil when no repair
    /// is batched by this table's keys.
    var batchKey: String? = nil
}

/// A table the store keeps from a table's keys in the same transaction as every write, placed on Citus so that
/// a question by the record's key (rather than its holder's) asks one shard. It has the table's two key
/// columns: the holder, then the record's key. Never exported.
struct LookupDescription {
    /// The lookup's name.
    var name: String
    /// Where Citus puts it.
    var placement: TablePlacement
}

/// The columns of `unmapped_values` in the order the importer writes them and the export reads them.
enum UnmappedColumn: Int, CaseIterable {
    case root, path, stringValue, numberValue, booleanValue, sortKey

    /// The column's name.
    var name: String {
        switch self {
        case .root: "root"
        case .path: "path"
        case .stringValue: "string_value"
        case .numberValue: "number_value"
        case .booleanValue: "boolean_value"
        case .sortKey: "sort_key"
        }
    }
}
