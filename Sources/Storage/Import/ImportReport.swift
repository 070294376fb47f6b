/// What an import did, per top-level node and table, in the spirit of pgloader's summary.
public struct ImportReport: Sendable {

    /// One line of the summary: rows a node put into one table.
    public struct Line: Sendable, Equatable {
        /// The top-level node (`posts`), or `(other nodes)` for all unknown ones together.
        public var node: String
        /// The table the rows went to.
        public var table: String
        /// Rows the mapping produced.
        public var rowsRead: Int
        /// Rows stored (read, less those a later duplicate key replaced).
        public var rowsImported: Int
        /// COPY bytes sent for these rows (in COPY's binary format).
        public var bytes: Int
    }

    /// A top-level node's totals.
    public struct Node: Sendable, Equatable {
        /// The node's key, or `(other nodes)`.
        public var name: String
        /// Bytes of input the node took.
        public var inputBytes: Int
        /// Seconds spent reading and loading it.
        public var seconds: Double
        /// Values rejected under it.
        public var rejected: Int
    }

    /// What an import did after the file was read (the `ImportStep`s of one table together, every index build
    /// together), and how long it took.
    public struct Finishing: Sendable, Equatable {
        /// The `target` of the index builds, all together.
        public static let indexes = "indexes"
        /// The `target` of the ANALYZE of each table a whole-tree import filled, all together.
        public static let statistics = "statistics"
        /// The `target` of a whole-tree import's switch: the wait for readers that began before, then the
        /// statements that put the tables it filled in place (readers wait for those, and for the commit's record).
        public static let `switch` = "switch"
        /// The `target` of a whole-tree import's commit, where the server releases the files of the tables it
        /// replaced: readers no longer wait by then, but the import does.
        public static let commit = "commit"

        /// The table it wrote (`post_likes`, `post_keys`, `chat_holders`), or `Finishing.indexes`, `statistics`,
        /// `switch` or `commit`.
        public var target: String
        /// Steps taken: the indexes built, for `indexes`; the tables analyzed, for `statistics`.
        public var count: Int
        /// Seconds it took.
        public var seconds: Double
    }

    /// Lines by node, then table, in the order the nodes were met.
    public var lines: [Line] = []
    /// Node totals, in the order the nodes were met.
    public var nodes: [Node] = []
    /// The first rejects (at most `rejectsKept`), in input order, their values cut at 4 KB; `rejectCount`
    /// counts them all, and `onReject` sees each whole.
    public var rejects: [ImportReject] = []
    /// How many values were rejected.
    public var rejectCount = 0
    /// How many rejects the report lists.
    public static let rejectsKept = 100
    /// Every warning, in input order (at most 1,000 are kept; `warningCount` counts all).
    public var warnings: [ImportWarning] = []
    /// How many warnings there were.
    public var warningCount = 0
    /// Bytes of input read.
    public var inputBytes = 0
    /// Seconds from start to commit (or rollback).
    public var seconds: Double = 0
    /// What followed the reading, in order: part of `seconds`, in none of the nodes'.
    public var finishing: [Finishing] = []
    /// Whether the work was rolled back on purpose (`--dry-run`).
    public var isDryRun = false
    /// The import's mode.
    public var mode = ImportOptions.Mode.replace
    /// `merge`: rows the store held under the file's top-level nodes, which the file's nodes replaced.
    public var rowsReplaced = 0
    /// A whole-tree import that could not fill tables beside the store's, and so kept readers out from its
    /// first row to its commit: why (a trigger on a table, a view this role does not own, Citus). Nil otherwise.
    public var readersLockedOut: String?
    /// The sessions that read and loaded the file: 1, or a parallel whole-tree import's (`ImportOptions.jobs`,
    /// fewer when the server's connection limits left no room for more).
    public var sessions = 1

    /// Rows stored, all tables together.
    public var rowsImported: Int { lines.reduce(0) { $0 + $1.rowsImported } }

    /// Input bytes per second.
    public var bytesPerSecond: Double { seconds > 0 ? Double(inputBytes) / seconds : 0 }

    /// Adds a warning of the import's own (a session, the switch, the statistics), counted and kept.
    mutating func add(_ warning: ImportWarning) {
        warnings.append(warning)
        warningCount += 1
    }
    /// Counts `stored` rows in place of `deleted` ones (per table) in the lines of `node`: rows stored again
    /// otherwise (`PostsReshape`).
    mutating func replaceRows(_ deleted: [TreeTable: Int], with stored: [TreeTable: Int], node: String) {
        for table in TreeTable.allCases {
            let change = (stored[table] ?? 0) - (deleted[table] ?? 0)
            guard change != 0 else { continue }
            if let index = lines.firstIndex(where: { $0.node == node && $0.table == table.name }) {
                lines[index].rowsRead += change
                lines[index].rowsImported += change
            } else {
                lines.append(.init(node: node, table: table.name, rowsRead: change, rowsImported: change, bytes: 0))
            }
        }
        lines.removeAll { $0.rowsRead == 0 && $0.rowsImported == 0 }
        groupLinesByNode()
    }

    /// Puts the lines in the order of their nodes, each node's in the order they were met: a top-level key
    /// written twice, holding different tables, has its lines together.
    mutating func groupLinesByNode() {
        lines = nodes.flatMap { node in lines.filter { $0.node == node.name } }
    }
}
