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
    private var reader: JSONReader
    private let loader: TableLoader
    private let options: ImportOptions
    /// Hears what the import must act on before the rows that follow; answers how many rows of each table went.
    private let onFinding: (ImportFinding) throws -> [TreeTable: Int]
    private let onReject: (ImportReject) throws -> Void

    /// What it read and loaded so far (`TreeImport` counts a reshape's rows in it).
    var report = ImportReport()
    /// The path being read; a record's or an edge's keys are its levels below the table's root.
    private let path = ImportPath()
    /// `.priority` values of streamed objects, held until the object turns out to have a child (a node with only
    /// a priority vanishes).
    private var pendingPriorities: [(path: [String], value: TreeValue)] = []
    /// Rows emitted so far, to tell whether a streamed object got any.
    private var emittedRows = 0
    /// Held priorities written so far.
    private var priorityRowsEmitted = 0
    private var deletedRows: [TreeTable: Int] = [:]
    /// The sort key of the unmapped value being written (reused, row after row).
    private var orderBytes: [UInt8] = []
    /// Key trackers of the objects being read, by depth, reused from object to object.
    private var keyTrackers: [KeyTracker] = []
    /// Objects whose children are being read: `path` holds one key of each.
    private var objectsBeingRead = 0
    /// Empty typed slots of records already written, for the records to come, by table.
    private var spareSlots: [[RecordSlots]] = TreeTable.allCases.map { _ in [] }
    /// How many typed slots wait for a next record: one per table and level of records being read at once, not
    /// more however many records were read.
    var spareSlotCount: Int { spareSlots.reduce(0) { $0 + $1.count } }

    /// In a parallel import: the file's top-level nodes shared out among the sessions, and this session's number.
    var shares: (nodes: NodeShares, worker: Int)?
    /// Top-level nodes under this key that this importer (this session of a parallel import) imports are not
    /// read where they stand but after the rest of the file, by an importer `resuming` at them (`deferred`): the
    /// likes, after the posts that give them their owners (`LikesAfterPosts`).
    var deferredKey: String?
    /// The nodes under `deferredKey` this session skipped: the first one's index and where its value starts, and
    /// the last one's index.
    private(set) var deferred: DeferredNodes?
    /// The owner of each post, when the likes this importer reads are sent with their owners (`post_likes`'
    /// own columns) rather than staged until the posts are loaded.
    var likeOwners: PostOwners?
    /// The nodes the report names (`reportedNode`), in the order the file first has them (not kept when reading
    /// deferred nodes): a handful, however many top-level nodes the file holds.
    private(set) var reportedNodes: [String] = []
    /// Reading deferred nodes: the index of the last one; the importer stops after it.
    private var lastDeferredNode: Int?
    /// Whether it stopped after the last deferred node, short of the end of the file.
    private var isStoppedEarly = false
    /// The top-level node being read: its index in the file, and whether this session imports it (in a parallel
    /// import, it skips the nodes other sessions import).
    private(set) var node = (index: -1, isOwned: true)

    private static let maximumDepth = FirebaseKey.maximumDepth
    private static let maximumPathBytes = FirebaseKey.maximumPathBytes
    private static let maximumRejectValueBytes = 1 << 20
    private static let maximumWarningsKept = 1000
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
        deferredKey = key
        node.index = nodes.first - 1
        lastDeferredNode = nodes.last
    }

    private init(
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
    var loadedThrough: Int { deferred?.start.offset ?? reader.bytesRead }

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
        if !isStoppedEarly, try reader.next() != .end { preconditionFailure("the reader ends after one document") }
        report.inputBytes = reader.bytesRead
        report.seconds = (clock.now - started).seconds
        report.groupLinesByNode()
    }

    /// Adds rows read and stored per table to the node's lines, and the node's totals.
    private func importNode(_ key: String) throws {
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
    private func route(_ key: String) throws {
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
    private func descend(_ table: TreeTable) throws {
        guard path.count - 1 == table.keyDepth else {
            return try container { try self.descend(table) }
        }
        if table.isLeaf { try edge(table) } else { try record(table) }
    }

    // MARK: Shapes

    /// A level the import streams through: each child goes to `body`. A leaf where the level should be, the
    /// level's `.priority` and a `.value` are kept as unmapped values.
    private func container(_ body: () throws -> Void) throws {
        guard isContainerToken else { return try unmapped() }
        try streamChildren { key in
            if Self.pseudoChild(key) == .value { return try self.unmapped() }
            try body()
        }
    }

    /// `/posts/{id}`: an AppCoda feed post when some child is a leaf, a `.value` or an AppCoda field; a Makestagram
    /// owner's posts when every child is an object under another key (`recordRule(at:)`). That is a
    /// property of the tree, not of the order the file writes the children in: the children are held, as a feed
    /// post's fields are, until one decides. An owner's posts that outgrow the record budget before one does stream
    /// from then on, and should a leaf still come (or a child have spilled while held), the node is told as
    /// `reshaped`, for the import to store it again whole once its rows are in.
    private func postsChild() throws {
        guard isContainerToken else { return try unmapped() }
        var shape = options.knownPostShapes[TreeKey(path.key(1))].map { $0 ? PostsShape.feed : .owner } ?? .undecided
        var record = heldRecord(of: .feedPosts)
        var priority: TreeValue?
        var isReshaped = false
        var hasSpilledWhileHeld = false
        let rowsBefore = emittedRows
        try streamChildren(
            onDuplicate: { record.children[$0] = nil },
            onPriority: {
                priority = $0
                return true
            }
        ) { key in
            let isPost = self.isContainerToken && !Self.isFeedField(key)
            switch shape {
            case .feed:
                return try self.readField(key, of: .feedPosts, into: &record)
            case .owner:
                if isPost { return try self.record(.posts) }
                // A leaf after the posts streamed: what was stored of the node is stored again once all of it is.
                isReshaped = true
                return try self.unmapped()
            case .undecided:
                guard isPost else {
                    shape = .feed
                    return try self.readField(key, of: .feedPosts, into: &record)
                }
                if record.bytes >= self.options.recordMemoryBudget {
                    // Past the budget with posts only: an owner's posts, which stream.
                    shape = .owner
                    try self.emitHeldPosts(&record)
                    // A repeat of this key right after it rolls back to here, not over the held posts.
                    self.loader.mark(in: self.path.count - 1)
                    return try self.record(.posts)
                }
                let rows = self.emittedRows
                try self.readField(key, of: .feedPosts, into: &record)
                // A child larger than what is left of the budget went out as unmapped values, as a feed post's
                // does; under an owner's posts it is a post's place.
                if self.emittedRows > rows { hasSpilledWhileHeld = true }
            }
        }
        if shape == .undecided {
            shape = .owner
            try emitHeldPosts(&record)
        }
        if hasSpilledWhileHeld, shape == .owner { isReshaped = true }
        if shape == .feed {
            record.children[FirebaseKey.priority] = priority
            try emitRecord(.feedPosts, record: &record, rowsBefore: rowsBefore)
        } else {
            record.children.removeAll { spareSlots[TreeTable.feedPosts.rawValue].append($0) }
            if let priority, emittedRows > rowsBefore {
                try emitUnmappedLeaf(path.keys() + [FirebaseKey.priority], priority)
            }
        }
        if isReshaped { _ = try onFinding(.reshaped(path.keys(), isFeedPost: shape == .feed)) }
    }

    /// How `/posts/{id}` is stored, as far as its children read so far tell.
    private enum PostsShape {
        /// Every child so far an object under a key that is no AppCoda field: held.
        case undecided
        /// An AppCoda feed post: one record.
        case feed
        /// A Makestagram owner's posts: a record per child.
        case owner
    }

    /// Whether a child of `/posts/{id}` under `key` makes it a feed post whatever its value: an AppCoda field or
    /// `.value`.
    private static func isFeedField(_ key: UnsafeBufferPointer<UInt8>) -> Bool {
        if key.first == UInt8(ascii: ".") { return pseudoChild(key) == .value }
        return appCodaFieldKeys.contains { FirebaseKey.same($0, key) }
    }

    private static let appCodaFieldKeys = Array(appCodaFields)

    /// Emits the posts held in `record` (the children of an undecided `/posts/{id}`, all objects) as an owner's
    /// posts, each a record of its own, and empties it.
    private func emitHeldPosts(_ record: inout HeldRecord) throws {
        let posts = record.children.object.sorted { FirebaseKey.exportPrecedes($0.key.string, $1.key.string) }
        // The record is handed back once, when postsChild is done with it.
        record.children.removeAll()
        record.bytes = 0
        for (key, value) in posts {
            guard case .object(let fields) = value else { continue }
            var post = heldRecord(of: .posts)
            for (field, child) in fields { post.children[field.string] = child }
            var text = key.string
            text.withUTF8 { path.append($0) }
            defer { path.removeLast() }
            try emitRecord(.posts, record: &post, rowsBefore: emittedRows)
        }
    }

    /// For the path of `/posts/{id}`, whose children tell how it is stored, the rule (`TreeComparison.Rewrites`):
    /// it is an AppCoda feed post, one record, when some child is a leaf, `.value` or an AppCoda field (its key,
    /// and whether its value is an object); a Makestagram owner's posts otherwise. The order of the children does
    /// not matter. Nil for any other path.
    static func recordRule(at path: [String]) -> ((String, Bool) -> Bool)? {
        guard path.count - 1 == TreeTable.feedPosts.keyDepth, path.first == TreeTable.feedPosts.rootKey else {
            return nil
        }
        return { key, isObject in !isObject || key == FirebaseKey.value || appCodaFields.contains(key) }
    }

    /// Whether the import stores every object at `path` as one record, whatever its children: the path is as
    /// deep as a record table's keys under its root, and not one that /posts shares between two tables.
    static func storesRecord(at path: [String]) -> Bool {
        guard let root = path.first else { return false }
        return TreeTable.tables(under: root).contains { table in
            !table.isLeaf && table != .feedPosts && table.keyDepth == path.count - 1
        }
    }

    /// A record: one typed row when it is an object, unmapped values when it is a leaf or a leaf with a priority.
    /// Its fields are read one by one into memory up to `options.recordMemoryBudget` bytes; past that, the rest stream
    /// into unmapped values under the record's path (which export merges back into it), so that a record of any
    /// size costs bounded memory. The typed fields always land in the row.
    private func record(_ table: TreeTable) throws {
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
    private func emitRecord(_ table: TreeTable, record: inout HeldRecord, rowsBefore: Int) throws {
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
    private func appendKeys(of table: TreeTable, to row: inout CopyRowEncoder) throws {
        precondition(path.count - 1 == table.keyDepth, "a row's path is as deep as its table's keys")
        try path.forEachKey(from: 1) { try row.append(utf8: $0) }
    }

    /// A record's children as they are read, and the bytes of JSON its untyped fields took.
    private struct HeldRecord {
        var children: RecordChildren
        var bytes = 0
    }

    /// An empty record of `table`, in typed slots an earlier record left (one allocation less per record).
    private func heldRecord(of table: TreeTable) -> HeldRecord {
        HeldRecord(children: RecordChildren(of: table, slots: spareSlots[table.rawValue].popLast()))
    }

    /// Reads the field `key` (the reader on its value) into `record`: a typed scalar always (it is at most
    /// 10 MB), a typed object (`poster`, `members`, `sender`) when it fits the budget on its own, any other field
    /// while the record's other fields fit it too; what does not is written as unmapped values at its path.
    private func readField(_ key: UnsafeBufferPointer<UInt8>, of table: TreeTable, into record: inout HeldRecord)
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
    private func edge(_ table: TreeTable) throws {
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

    /// The current value, streamed leaf by leaf into `unmapped_values`.
    private func unmapped() throws {
        if isContainerToken {
            return try streamChildren { _ in try self.unmapped() }
        }
        guard let value = try leafValue() else { return }
        try emitUnmappedLeaf(path.keys(), value)
    }

    private func emitUnmapped(_ tree: TreeValue) throws {
        for (leafPath, value) in tree.leaves(prefix: path.keys()) {
            try emitUnmappedLeaf(leafPath, value)
        }
    }

    private func emitUnmappedLeaf(_ leafPath: [String], _ value: TreeValue) throws {
        try beforeEmit()
        try loader.appendRow(.unmappedValues) { row in
            try row.append(leafPath[0])
            try row.append(Array(leafPath.dropFirst()))
            switch value {
            case .string(let text):
                try row.append(text)
                row.append(nil as Double?)
                row.append(nil as Bool?)
            case .number(let number):
                try row.append(nil as String?)
                row.append(number)
                row.append(nil as Bool?)
            case .bool(let flag):
                try row.append(nil as String?)
                row.append(nil as Double?)
                row.append(flag)
            case .object:
                preconditionFailure("leaves only")
            }
            orderBytes.removeAll(keepingCapacity: true)
            FirebaseKey.appendOrder(ofPath: leafPath, to: &orderBytes)
            try orderBytes.withUnsafeBufferPointer { try row.append(utf8: $0) }
        }
    }

    /// Writes the priorities of the objects a row is about to land in, outermost first.
    private func beforeEmit() throws {
        emittedRows += 1
        guard !pendingPriorities.isEmpty else { return }
        let pending = pendingPriorities
        pendingPriorities.removeAll()
        priorityRowsEmitted += pending.count
        for (priorityPath, value) in pending { try emitUnmappedLeaf(priorityPath, value) }
    }

    /// Streams the children of the current object or array to `body`; an object's `.priority` is held until it
    /// has a child, and dropped if it never gets one.
    /// `onPriority` may take the object's priority instead (returning true); an optional closure would escape, and
    /// box the caller's captured record on every call.
    private func streamChildren(
        onDuplicate: (String) -> Void = { _ in }, onPriority: (TreeValue) -> Bool = { _ in false },
        _ body: (_ key: UnsafeBufferPointer<UInt8>) throws -> Void
    ) throws {
        let depth = path.count
        let rowsBefore = emittedRows
        try forEachChild(onDuplicate: onDuplicate) { key in
            guard Self.pseudoChild(key) == .priority else { return try body(key) }
            guard let value = try self.leafValue() else { return }
            if onPriority(value) { return }
            self.pendingPriorities.removeAll { $0.path.count == depth + 1 }
            self.pendingPriorities.append((self.path.keys(), value))
        }
        if let last = pendingPriorities.last, last.path.count == depth + 1 {
            if emittedRows > rowsBefore {
                try beforeEmit()
            } else {
                pendingPriorities.removeLast()
            }
        }
    }

    // MARK: Reading values

    /// The current value as an in-memory tree when its JSON takes at most `budget` bytes; nil when it vanishes
    /// (null, empty, only a priority), is rejected, or was larger: then what had been read and all the rest were
    /// written as unmapped values at their paths instead.
    private func readTree(budget: Int) throws -> TreeValue? {
        var isSpilled = false
        return try readTree(from: reader.tokenStart, budget: budget, isSpilled: &isSpilled)
    }

    private func readTree(from start: Int, budget: Int, isSpilled: inout Bool) throws -> TreeValue? {
        guard isContainerToken else {
            guard let value = try leafValue() else { return nil }
            guard !isSpilled, reader.bytesRead - start <= budget else {
                isSpilled = true
                try emitUnmappedLeaf(path.keys(), value)
                return nil
            }
            return value
        }
        if isSpilled {
            try unmapped()
            return nil
        }
        return try readChildren(from: start, budget: budget, isSpilled: &isSpilled).map { .object($0.object) }
    }

    /// The children of the object or array the current token opens, read as `readTree` reads a value: nil when
    /// it vanishes or went out as unmapped values. A typed object field (`poster`, `members`) keeps them as they
    /// are, which its columns take without a dictionary made.
    private func readChildren(from start: Int, budget: Int, isSpilled: inout Bool) throws -> FieldList? {
        var children = FieldList()
        var spilled = false
        try forEachChild(onDuplicate: { children[$0] = nil }) { _ in
            if !spilled, self.reader.bytesRead - start > budget { spilled = true }
            if spilled {
                try self.writeOut(&children, under: self.path.keys().dropLast())
                return try self.unmapped()
            }
            let child = try self.readTree(from: start, budget: budget, isSpilled: &spilled)
            if spilled {
                // Over the budget inside this child, which went out on its own: its siblings read so far follow.
                try self.writeOut(&children, under: self.path.keys().dropLast())
            } else {
                children[self.path.lastKey] = child
            }
        }
        if spilled {
            isSpilled = true
            return nil
        }
        // An object that only has a priority is an empty node, which vanishes.
        if children.isEmpty || (children.count == 1 && children[FirebaseKey.priority] != nil) { return nil }
        return children
    }

    /// Writes held children out as unmapped values under `parent`, and forgets them.
    private func writeOut(_ children: inout FieldList, under parent: ArraySlice<String>) throws {
        try children.forEach { key, value in
            for (leafPath, leaf) in value.leaves(prefix: Array(parent) + [key]) {
                try emitUnmappedLeaf(leafPath, leaf)
            }
        }
        children = FieldList()
    }

    /// Reads the current scalar into the typed slot `step` of `children`: a string or a number as its token's
    /// bytes (no String made); what `leafValue` rejects leaves the slot empty.
    private func readTypedScalar(at step: Int, into children: inout RecordChildren) throws {
        switch reader.token {
        case .string where FirebaseKey.problem(withString: reader.text) == nil:
            children.setText(reader.text, at: step)
        case .number where reader.number.isFinite:
            children.setNumber(reader.number, text: reader.text, at: step)
        default:
            children.setValue(try leafValue(), at: step)
        }
    }

    /// The current scalar as a leaf, nil when it is rejected.
    private func leafValue() throws -> TreeValue? {
        switch reader.token {
        case .string:
            if let problem = FirebaseKey.problem(withString: reader.text) {
                try reject(problem)
                return nil
            }
            return .string(reader.string)
        case .number:
            guard reader.number.isFinite else {
                try reject("a number outside the range of a double")
                return nil
            }
            return .number(reader.number == 0 ? 0 : reader.number)
        case .true: return .bool(true)
        case .false: return .bool(false)
        default: preconditionFailure("a scalar token")
        }
    }

    /// A pseudo-child's key.
    private enum PseudoChild {
        case priority, value
    }

    /// Which pseudo-child `key` names, if any: one byte read spares every other key two comparisons.
    private static func pseudoChild(_ key: UnsafeBufferPointer<UInt8>) -> PseudoChild? {
        guard key.first == UInt8(ascii: ".") else { return nil }
        if FirebaseKey.same(FirebaseKey.priority, key) { return .priority }
        if FirebaseKey.same(FirebaseKey.value, key) { return .value }
        return nil
    }

    private var isContainerToken: Bool {
        reader.token == .objectStart || reader.token == .arrayStart
    }

    /// Calls `body` for each child of the object or array the current token opens, with `path` extended by the
    /// child's key and the reader on the child's first token; `body` gets the key's bytes too, valid until it
    /// reads the child's children. Nulls vanish; bad keys, paths too deep or too long and misplaced
    /// `.priority`/`.value` are rejected; a repeated key's earlier occurrence is removed (`onDuplicate`, never
    /// optional: an optional closure escapes, and the record it captured was boxed on the heap for each record).
    private func forEachChild(
        onDuplicate: (String) -> Void = { _ in }, _ body: (_ key: UnsafeBufferPointer<UInt8>) throws -> Void
    ) throws {
        // The tracker of this depth, changed in place: taking it out of the array and back copied it (a dozen
        // reference counts per object read). Every nested call is a child's, one level deeper.
        let depth = path.count
        precondition(depth == objectsBeingRead, "one key tracker per object being read")
        if depth == keyTrackers.count { keyTrackers.append(KeyTracker()) }
        objectsBeingRead += 1
        defer {
            objectsBeingRead -= 1
            keyTrackers[depth].reset()
        }
        // A merge's update names the children of the node it merges into (checked once for the object).
        var deletesAsRead = false
        if case .deletedAsRead = options.namedChildren { deletesAsRead = true }
        let replacesChildren =
            options.mode == .merge && deletesAsRead && depth == options.at.count
            && FirebaseKey.samePath(path.keys(), options.at)
        var previousSibling: SiblingMark?
        var hasValue = false
        var hasChildren = false
        while try reader.moveToNextChild() {
            // Valid until the reader moves to another child: `body` has it until it reads the child's children.
            let key = reader.childKey
            if depth == 0 {
                node.index += 1
                let isDeferred = deferredKey.map { FirebaseKey.same($0, key) } ?? false
                if let lastDeferredNode {
                    guard node.index <= lastDeferredNode else {
                        isStoppedEarly = true
                        return
                    }
                    node.isOwned = isDeferred
                } else {
                    let text = String(decoding: key, as: UTF8.self)
                    let reported = Self.reportedNode(text)
                    if !reportedNodes.contains(reported) { reportedNodes.append(reported) }
                    node.isOwned = shares.map { $0.nodes.claim(node.index, key: text, by: $0.worker) } ?? true
                    // Every occurrence (a repeated key's too): the importer reading them replaces one by the next.
                    if node.isOwned, isDeferred {
                        deferred = DeferredNodes(
                            first: deferred?.first ?? node.index, last: node.index,
                            start: deferred?.start ?? reader.position)
                        node.isOwned = false
                    }
                }
                // Another session imports it, or this one later: it reads the node's keys, values and errors then.
                if !node.isOwned {
                    if isContainerToken { try reader.skipContainerUnchecked() }
                    continue
                }
            }
            if let problem = FirebaseKey.problem(with: key) {
                try reject(problem, at: childPath(key))
                continue
            }
            switch keyTrackers[depth].insert(key) {
            case .new:
                break
            case .duplicate:
                // The sibling before went down to this level last: its key is the path's, just removed.
                let isPrevious = previousSibling != nil && path.isKeyJustRemoved(key)
                let text = String(decoding: key, as: UTF8.self)
                try duplicate(text, rollingBack: isPrevious ? previousSibling : nil)
                onDuplicate(text)
            case .maybe:
                let text = String(decoding: key, as: UTF8.self)
                try duplicate(text, rollingBack: nil, isCertain: false)
                onDuplicate(text)
            }
            if replacesChildren {
                // Firebase's update: each child the file names replaces the store's child whole (null deletes it).
                report.rowsReplaced += try onFinding(.replacedChild(childPath(key))).values.reduce(0, +)
            }
            if reader.token == .null { continue }
            if depth + 1 > Self.maximumDepth {
                try reject(FirebaseKey.tooDeep, at: childPath(key))
                continue
            }
            if path.byteCount + key.count + 1 > Self.maximumPathBytes {
                try reject(FirebaseKey.pathTooLong, at: childPath(key))
                continue
            }
            switch Self.pseudoChild(key) {
            case .priority:
                guard reader.token == .string || reader.token == .number else {
                    try reject("a priority must be a string or a number", at: childPath(key))
                    continue
                }
            case .value:
                guard depth > 0 else {
                    // The whole tree as a leaf (with a priority): the store holds named nodes only.
                    try reject("a leaf value at the root; an export's root must be an object", at: childPath(key))
                    continue
                }
                guard !isContainerToken, !hasChildren else {
                    try reject("\".value\" must be a leaf, beside nothing but \".priority\"", at: childPath(key))
                    continue
                }
                hasValue = true
            case nil:
                guard !hasValue else {
                    try reject("a node with a \".value\" cannot have children", at: childPath(key))
                    continue
                }
                hasChildren = true
            }
            path.append(key)
            defer { path.removeLast() }
            loader.mark(in: depth)
            previousSibling = SiblingMark(priorityRows: priorityRowsEmitted)
            try body(key)
        }
    }

    /// The path of the child `key` of the node at `path`, as Strings.
    private func childPath(_ key: UnsafeBufferPointer<UInt8>) -> [String] {
        path.keys() + [String(decoding: key, as: UTF8.self)]
    }

    /// A child as it started (the loader marked its buffers in the slot of its depth): a repeat of its key right
    /// after it drops its rows from the loader's buffers, unsent, rather than deleting them (a DELETE in the
    /// import's transaction leaves a dead row that every later DELETE of the same key walks past: 20,000 repeats
    /// took minutes).
    private struct SiblingMark {
        /// Held priorities of enclosing objects written by then; rows written later may hold one.
        var priorityRows: Int
    }

    /// A key met twice in one object (or, unless `isCertain`, maybe: then the store is asked): the last
    /// occurrence wins, so what the earlier one stored goes. `previous` is the child read just before, when it
    /// had the same key.
    private func duplicate(_ key: String, rollingBack previous: SiblingMark?, isCertain: Bool = true) throws {
        let fullPath = path.keys() + [key]
        pendingPriorities.removeAll { FirebaseKey.isPath($0.path[...], atOrBelow: fullPath[...]) }
        var deleted: [TreeTable: Int]
        if let previous, previous.priorityRows == priorityRowsEmitted,
            let dropped = loader.rollBack(toMarkIn: path.count)
        {
            deleted = dropped
        } else {
            deleted = try onFinding(.repeatedKey(fullPath))
        }
        for (table, count) in deleted { deletedRows[table, default: 0] += count }
        guard isCertain || deleted.values.contains(where: { $0 > 0 }) else { return }
        report.warningCount += 1
        if report.warnings.count < Self.maximumWarningsKept {
            report.warnings.append(
                .init(
                    path: Self.describe(fullPath[...]),
                    message: "duplicate key at \(reader.position): the last occurrence wins"))
        }
    }

    // MARK: Rejects

    /// Records a reject of the current value (consuming it) and aborts when there are more than allowed.
    private func reject(_ reason: String, at rejectPath: [String]? = nil) throws {
        let (value, isTruncated, valueBytes) = try reader.captureValue(maximumBytes: Self.maximumRejectValueBytes)
        let rejected = ImportReject(
            path: Self.describe((rejectPath ?? path.keys())[...]), reason: reason, value: value,
            isTruncated: isTruncated, valueBytes: valueBytes)
        report.rejectCount += 1
        if report.rejects.count < ImportReport.rejectsKept { report.rejects.append(rejected.cut(to: 4096)) }
        try onReject(rejected)
        guard report.rejectCount > options.maximumRejects else { return }
        let shown = FirebaseKey.describe(path: rejectPath ?? path.keys())
        var error = StorageError(
            .malformedInput, "rejected \(shown): \(reason)",
            hint: options.maximumRejects == 0
                ? "Allowing rejected values lets them through (they are listed and handed to the reject handler)."
                : "More than the \(options.maximumRejects) allowed values were rejected.",
            context: "reading \(shown)")
        error.inputPosition = reader.position
        error.remedy = .allowRejects(allowed: options.maximumRejects)
        throw error
    }

    static func describe(_ path: ArraySlice<String>) -> String {
        "/" + path.joined(separator: "/")
    }
}

/// What the importer found that changes rows it or the store already holds.
enum ImportFinding: Equatable {
    /// A `/posts/{id}` whose children, all read, say it is stored otherwise than it began to be (a leaf after its
    /// posts streamed): once the rows are in, the node is read back and stored again whole, in its shape.
    case reshaped([String], isFeedPost: Bool)
    /// A merge names this child of the node it merges into: it replaces the store's child whole (a `null`
    /// deletes it), so whatever is stored at or below it goes.
    case replacedChild([String])
    /// A key met again in one object after the rows of its earlier occurrence were sent: the last occurrence
    /// wins, so what is stored at or below the path goes.
    case repeatedKey([String])

    /// The absolute path whose stored rows go.
    var path: [String] {
        switch self {
        case .replacedChild(let path), .repeatedKey(let path), .reshaped(let path, _): path
        }
    }
}

/// Top-level nodes an importer skipped to read after the rest of the file (`TreeImporter.deferredKey`).
struct DeferredNodes {
    /// The first one's index among the file's top-level nodes.
    var first: Int
    /// The last one's index.
    var last: Int
    /// Where the first one's value starts.
    var start: JSONReader.Position
}
