import FirebaseTree
import Foundation
internal import PostgresClient

/// Walks a Firebase export token by token and loads it: known subtrees into typed rows, everything else leaf by
/// leaf into `unmapped_values`, with Firebase's semantics (arrays are integer-keyed objects, nulls and empty
/// objects vanish, priorities are pseudo-children) and its limits (keys, 32 levels, 768-byte paths, 10 MB
/// strings) enforced as rejects.
///
/// Only one record (one typed row's subtree) is ever held in memory; containers above records stream.
///
/// The importer runs no SQL: rows go to the loader, and what changes rows already sent (`ImportFinding`) goes to
/// its import, which decides what to do about the store and says how many rows went.
final class TreeImporter {
    var reader: JSONReader
    let loader: TableLoader
    let options: ImportOptions
    /// Hears what the import must act on before the rows that follow; answers how many rows of each table went.
    var onFinding: (ImportFinding) throws -> [TreeTable: Int]
    let onReject: (ImportReject) throws -> Void

    /// What it read and loaded so far (`TreeImport` counts a reshape's rows in it).
    var report = ImportReport()
    /// The path being read; a record's or an edge's keys are its levels below the table's root.
    let path = ImportPath()
    /// `.priority` values of streamed objects, held until the object turns out to have a child (a node with only
    /// a priority vanishes).
    var pendingPriorities: [(path: [String], value: TreeValue)] = []
    /// Rows emitted so far, to tell whether a streamed object got any.
    var emittedRows = 0
    /// Held priorities written so far.
    var priorityRowsEmitted = 0
    var deletedRows: [TreeTable: Int] = [:]
    /// The sort key of the unmapped value being written (reused, row after row).
    var orderBytes: [UInt8] = []
    /// Key trackers of the objects being read, by depth, reused from object to object.
    var keyTrackers: [KeyTracker] = []
    /// Objects whose children are being read: `path` holds one key of each.
    var objectsBeingRead = 0
    /// Empty typed slots of records already written, for the records to come, by table.
    var spareSlots: [[RecordSlots]] = TreeTable.allCases.map { _ in [] }
    /// How many typed slots wait for a next record: one per table and level of records being read at once, not
    /// more however many records were read.
    var spareSlotCount: Int { spareSlots.reduce(0) { $0 + $1.count } }

    /// Which top-level nodes it reads where they stand (a parallel import's sessions, the likes after the posts).
    var topLevel = TopLevelNodes()
    /// The owner of each post, when the likes this importer reads are sent with their owners (`post_likes`'
    /// own columns) rather than staged until the posts are loaded.
    var likeOwners: PostOwners?

    static let maximumDepth = FirebaseKey.maximumDepth
    static let maximumPathBytes = FirebaseKey.maximumPathBytes
    static let maximumRejectValueBytes = 1 << 20
    static let maximumWarningsKept = 1000
    static let appCodaFields: Set<String> = ["imageFileURL", "user", "votes", "timestamp"]

    /// An importer of `source`, which with `options.at` is read as the node at that path of the tree that holds
    /// it there, with error positions in `source`'s own bytes.
    convenience init(
        source: some ByteSource, loader: TableLoader, options: ImportOptions,
        onFinding: @escaping (ImportFinding) throws -> [TreeTable: Int],
        onReject: @escaping (ImportReject) throws -> Void
    ) {
        if options.at.isEmpty {
            self.init(
                reader: JSONReader(source: source), loader: loader, options: options, onFinding: onFinding,
                onReject: onReject)
        } else {
            let nested = NestedSource(source, at: options.at)
            self.init(
                reader: JSONReader(source: nested, firstOffset: -nested.prefixLength), loader: loader,
                options: options, onFinding: onFinding, onReject: onReject)
        }
    }

    /// An importer of the nodes under `key` that another importer of the same whole-tree file deferred: `file`
    /// is the file, read from its start; it is skipped to the first such node, and the importer stops after the
    /// last, skipping the nodes between. Positions, node indexes and the nodes' keys are the file's.
    convenience init(
        resuming nodes: DeferredNodes, under key: String, of file: some ByteSource, loader: TableLoader,
        options: ImportOptions, onFinding: @escaping (ImportFinding) throws -> [TreeTable: Int],
        onReject: @escaping (ImportReject) throws -> Void
    ) throws {
        precondition(options.at.isEmpty, "only a whole-tree import defers nodes")
        var file = file
        var skipped = 0
        while skipped < nodes.start.offset {
            let count = try file.skip(nodes.start.offset - skipped)
            guard count > 0 else {
                throw StorageError(.io, "the file ended at byte \(skipped) on a second reading: it changed meanwhile")
            }
            skipped += count
        }
        let nested = NestedSource(file, at: [key], isClosed: false)
        self.init(
            reader: JSONReader(source: nested, resumingAt: nodes.start, prefixLength: nested.prefixLength),
            loader: loader, options: options, onFinding: onFinding, onReject: onReject)
        topLevel = TopLevelNodes(resuming: nodes, under: key)
    }

    init(
        reader: consuming JSONReader, loader: TableLoader, options: ImportOptions,
        onFinding: @escaping (ImportFinding) throws -> [TreeTable: Int],
        onReject: @escaping (ImportReject) throws -> Void
    ) {
        self.reader = reader
        self.loader = loader
        self.options = options
        self.onFinding = onFinding
        self.onReject = onReject
    }

    /// Bytes of input read so far.
    var bytesRead: Int { reader.bytesRead }

    /// How far in the file every node before was loaded: `bytesRead`, or where the first deferred node starts.
    var loadedThrough: Int { topLevel.deferred?.start.offset ?? reader.bytesRead }

    /// The Firebase path being read, for errors.
    var pathDescription: String { reader.pathDescription }

    // MARK: The document

    /// Runs it and sends the rows the loader still holds; after a failure the loader's open COPY ends, storing
    /// nothing of it.
    func load() throws {
        do {
            try StorageError.converting { try run() }
            try loader.flush()
        } catch {
            loader.abort()
            throw error
        }
    }

    /// Reads the whole document and hands every row to the loader.
    func run() throws {
        let clock = ContinuousClock()
        let started = clock.now
        switch try reader.next() {
        case .null:
            break
        case .objectStart, .arrayStart:
            try forEachChild { _ in try self.importNode(self.path.key(0)) }
        default:
            try reject("a leaf value at the root; an export's root must be an object")
        }
        if !topLevel.isStoppedEarly, try reader.next() != .end {
            preconditionFailure("the reader ends after one document")
        }
        report.inputBytes = reader.bytesRead
        report.seconds = (clock.now - started).seconds
        report.groupLinesByNode()
    }

    /// Adds rows read and stored per table to the node's lines, and the node's totals.
    func importNode(_ key: String) throws {
        let clock = ContinuousClock()
        let started = clock.now
        let bytesBefore = reader.bytesRead
        let countsBefore = loader.counts
        let deletedBefore = deletedRows
        let rejectsBefore = report.rejectCount
        try route(key)
        let node = Self.reportedNode(key)
        for table in TreeTable.allCases {
            let rows = loader.counts[table.rawValue].rows - countsBefore[table.rawValue].rows
            let deleted = (deletedRows[table] ?? 0) - (deletedBefore[table] ?? 0)
            guard rows > 0 || deleted > 0 else { continue }
            let bytes = loader.counts[table.rawValue].bytes - countsBefore[table.rawValue].bytes
            if let index = report.lines.firstIndex(where: { $0.node == node && $0.table == table.name }) {
                report.lines[index].rowsRead += rows
                report.lines[index].rowsImported += rows - deleted
                report.lines[index].bytes += bytes
            } else {
                report.lines.append(
                    .init(
                        node: node, table: table.name, rowsRead: rows, rowsImported: rows - deleted,
                        bytes: bytes))
            }
        }
        let seconds = (clock.now - started).seconds
        let rejected = report.rejectCount - rejectsBefore
        if let index = report.nodes.firstIndex(where: { $0.name == node }) {
            report.nodes[index].inputBytes += reader.bytesRead - bytesBefore
            report.nodes[index].seconds += seconds
            report.nodes[index].rejected += rejected
        } else {
            report.nodes.append(
                .init(
                    name: node, inputBytes: reader.bytesRead - bytesBefore, seconds: seconds,
                    rejected: rejected))
        }
    }

    /// The name a top-level node's lines go under in the report: its key, or `(other nodes)` for every node the
    /// store keeps as unmapped values.
    static func reportedNode(_ key: String) -> String {
        TreeTable.tables(under: key).isEmpty ? "(other nodes)" : key
    }

    /// Sends a top-level node to the tables described under it: down the levels of their keys to a record or
    /// an edge; /posts holds two tables, told apart child by child (`postsChild`).
    func route(_ key: String) throws {
        let tables = TreeTable.tables(under: key)
        switch tables.count {
        case 0: try unmapped()
        case 1: try descend(tables[0])
        default:
            precondition(Set(tables) == [.posts, .feedPosts], "only /posts holds two tables")
            try container { try self.postsChild() }
        }
    }

    /// The level of `table`'s key path below its root: a row once the path is whole, a container above it.
    func descend(_ table: TreeTable) throws {
        guard path.count - 1 == table.keyDepth else {
            return try container { try self.descend(table) }
        }
        if table.isLeaf { try edge(table) } else { try record(table) }
    }

    // MARK: Shapes

    /// A level the import streams through: each child goes to `body`. A leaf where the level should be, the
    /// level's `.priority` and a `.value` are kept as unmapped values.
    func container(_ body: () throws -> Void) throws {
        guard isContainerToken else { return try unmapped() }
        try streamChildren { key in
            if Self.pseudoChild(key) == .value { return try self.unmapped() }
            try body()
        }
    }

    /// A record: one typed row when it is an object, unmapped values when it is a leaf or a leaf with a priority.
    /// Its fields are read one by one into memory up to `options.recordMemoryBudget` bytes; past that, the rest stream
    /// into unmapped values under the record's path (which export merges back into it), so that a record of any
    /// size costs bounded memory. The typed fields always land in the row.
    func record(_ table: TreeTable) throws {
        guard isContainerToken else { return try unmapped() }
        var record = heldRecord(of: table)
        let rowsBefore = emittedRows
        try forEachChild(onDuplicate: { record.children[$0] = nil }) { key in
            try self.readField(key, of: table, into: &record)
        }
        try emitRecord(table, record: &record, rowsBefore: rowsBefore)
    }

    /// Emits the row of the record at `path`, read into memory; when all it holds is a priority but some of its
    /// fields went out as unmapped values (`emittedRows` passed `rowsBefore`), the priority joins them. The
    /// children are sorted into columns where `record` holds them (no copy), and its typed slots, emptied, kept
    /// for the next record.
    func emitRecord(_ table: TreeTable, record: inout HeldRecord, rowsBefore: Int) throws {
        defer { record.children.removeAll { spareSlots[table.rawValue].append($0) } }
        // Most records have typed fields only: nothing else to look up.
        let priority = record.children.rest.isEmpty ? nil : record.children.rest[FirebaseKey.priority]
        if record.children.isEmpty || (record.children.count == 1 && priority != nil) {
            // An object that only has a priority is an empty node, which vanishes.
            if let priority, emittedRows > rowsBefore {
                try emitUnmappedLeaf(path.keys() + [FirebaseKey.priority], priority)
            }
        } else if !record.children.rest.isEmpty, record.children.rest[FirebaseKey.value] != nil {
            try emitUnmapped(.object(record.children.object))
        } else {
            try beforeEmit()
            try loader.appendRow(table) { row in
                try self.appendKeys(of: table, to: &row)
                try table.encodeRecord(children: &record.children, into: &row)
            }
        }
    }

    /// Appends the keys of the row at `path` (its levels below the table's root).
    func appendKeys(of table: TreeTable, to row: inout CopyRowEncoder) throws {
        precondition(path.count - 1 == table.keyDepth, "a row's path is as deep as its table's keys")
        try path.forEachKey(from: 1) { try row.append(utf8: $0) }
    }

    /// A record's children as they are read, and the bytes of JSON its untyped fields took.
    struct HeldRecord {
        var children: RecordChildren
        var bytes = 0
    }

    /// An empty record of `table`, in typed slots an earlier record left (one allocation less per record).
    func heldRecord(of table: TreeTable) -> HeldRecord {
        HeldRecord(children: RecordChildren(of: table, slots: spareSlots[table.rawValue].popLast()))
    }

    /// Reads the field `key` (the reader on its value) into `record`: a typed scalar always (it is at most
    /// 10 MB), a typed object (`poster`, `members`, `sender`) when it fits the budget on its own, any other field
    /// while the record's other fields fit it too; what does not is written as unmapped values at its path.
    func readField(_ key: UnsafeBufferPointer<UInt8>, of table: TreeTable, into record: inout HeldRecord)
        throws
    {
        let start = reader.tokenStart
        let step = table.typedStep(of: key)
        if let step, !isContainerToken {
            return try readTypedScalar(at: step, into: &record.children)
        }
        let budget = step != nil ? options.recordMemoryBudget : options.recordMemoryBudget - record.bytes
        guard budget > 0 else { return try unmapped() }
        if let step {
            // A typed object: its children as read, which its columns take.
            var isSpilled = false
            guard let children = try readChildren(from: start, budget: budget, isSpilled: &isSpilled) else { return }
            record.children.setFields(children, at: step)
        } else {
            guard let value = try readTree(budget: budget) else { return }
            record.children.rest[path.lastKey] = value
            record.bytes += reader.bytesRead - start
        }
    }

    /// A `true` under a key (a like, a follow); anything else there is kept as unmapped values.
    func edge(_ table: TreeTable) throws {
        guard reader.token == .true else { return try unmapped() }
        try beforeEmit()
        if table == .postLikes, let likeOwners {
            return try path.withKey(1) { postKey in
                try likeOwners.withOwner(ofPostKey: postKey) { owner in
                    try loader.appendRow(table, leadingWith: owner) { row in try self.appendKeys(of: table, to: &row) }
                }
            }
        }
        try loader.appendRow(table) { row in try self.appendKeys(of: table, to: &row) }
    }
}
