import Foundation

/// Walks a Firebase export token by token and loads it: known subtrees into typed rows, everything else leaf by
/// leaf into `unmapped_values`, with Firebase's semantics (arrays are integer-keyed objects, nulls and empty
/// objects vanish, priorities are pseudo-children) and its limits (keys, 32 levels, 768-byte paths, 10 MB
/// strings) enforced as rejects.
///
/// Only one record (one typed row's subtree) is ever held in memory; containers above records stream.
final class TreeImporter {
    private var reader: JSONReader
    private let loader: TableLoader
    private let options: ImportOptions
    /// Removes every stored row at or below an absolute path (a duplicate key's earlier occurrence).
    private let deleteRows: ([String]) throws -> [TreeTable: Int]
    private let onReject: (ImportReject) throws -> Void

    private(set) var report = ImportReport()
    private var path: [String] = []
    private var pathByteCount = 0
    /// `.priority` values of streamed objects, held until the object turns out to have a child (a node with only
    /// a priority vanishes).
    private var pendingPriorities: [(path: [String], value: TreeValue)] = []
    /// Rows emitted so far, to tell whether a streamed object got any.
    private var emittedRows = 0
    private var recordStart: Int?
    private var deletedRows: [TreeTable: Int] = [:]
    /// The sort key of the unmapped value being written (reused, row after row).
    private var orderBytes: [UInt8] = []

    private static let maximumDepth = 32
    private static let maximumPathBytes = 768
    private static let maximumStringBytes = 10 << 20
    private static let maximumRejectValueBytes = 1 << 20
    private static let maximumWarningsKept = 1000
    private static let appCodaFields: Set<String> = ["imageFileURL", "user", "votes", "timestamp"]

    /// An importer of `source`, which with `options.at` is read as the node at that path of the tree that holds
    /// it there, with error positions in `source`'s own bytes.
    init(
        source: some ByteSource, loader: TableLoader, options: ImportOptions,
        deleteRows: @escaping ([String]) throws -> [TreeTable: Int], onReject: @escaping (ImportReject) throws -> Void
    ) {
        if options.at.isEmpty {
            reader = JSONReader(source: source)
        } else {
            let nested = NestedSource(source, at: options.at)
            reader = JSONReader(source: nested, firstOffset: -nested.prefixLength)
        }
        self.loader = loader
        self.options = options
        self.deleteRows = deleteRows
        self.onReject = onReject
    }

    /// Bytes of input read so far.
    var bytesRead: Int { reader.bytesRead }

    /// The Firebase path being read, for errors.
    var pathDescription: String { reader.pathDescription }

    // MARK: The document

    /// Reads the whole document and hands every row to the loader.
    func run() throws {
        let clock = ContinuousClock()
        let started = clock.now
        switch try reader.next() {
        case .null:
            break
        case .objectStart, .arrayStart:
            try forEachChild { key in try self.importNode(key) }
        default:
            try reject("a leaf value at the root; an export's root must be an object")
        }
        guard try reader.next() == .end else { preconditionFailure("the reader ends after one document") }
        report.inputBytes = reader.bytesRead
        report.seconds = (clock.now - started).seconds
    }

    /// Adds rows read and stored per table to the node's lines, and the node's totals.
    private func importNode(_ key: String) throws {
        let clock = ContinuousClock()
        let started = clock.now
        let bytesBefore = reader.bytesRead
        let countsBefore = loader.counts
        let deletedBefore = deletedRows
        let rejectsBefore = report.rejects.count
        try route(key)
        let node = TreeTable.tables(under: key).isEmpty ? "(other nodes)" : key
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
                report.lines.append(.init(node: node, table: table.name, rowsRead: rows, rowsImported: rows - deleted,
                                          bytes: bytes))
            }
        }
        let seconds = (clock.now - started).seconds
        let rejected = report.rejects.count - rejectsBefore
        if let index = report.nodes.firstIndex(where: { $0.name == node }) {
            report.nodes[index].inputBytes += reader.bytesRead - bytesBefore
            report.nodes[index].seconds += seconds
            report.nodes[index].rejected += rejected
        } else {
            report.nodes.append(.init(name: node, inputBytes: reader.bytesRead - bytesBefore, seconds: seconds,
                                      rejected: rejected))
        }
    }

    /// Sends a top-level node to the mapping its name calls for.
    private func route(_ key: String) throws {
        switch key {
        case "users":
            try container { uid in try self.record(.users, keys: [uid]) }
        case "posts":
            try container { id in try self.postsChild(id) }
        case "postLikes", "followers", "following":
            let table: TreeTable = key == "postLikes" ? .postLikes : key == "followers" ? .followers : .following
            try container { a in try self.container { b in try self.edge(table, keys: [a, b]) } }
        case "timeline", "chats", "messages":
            let table: TreeTable = key == "timeline" ? .timeline : key == "chats" ? .chats : .messages
            try container { a in try self.container { b in try self.record(table, keys: [a, b]) } }
        default:
            try unmapped()
        }
    }

    // MARK: Shapes

    /// A level the import streams through: each child goes to `body`. A leaf where the level should be, the
    /// level's `.priority` and a `.value` are kept as unmapped values.
    private func container(_ body: @escaping (String) throws -> Void) throws {
        guard isContainerToken else { return try unmapped() }
        try streamChildren { key in
            if key == FirebaseKey.value { return try self.unmapped() }
            try body(key)
        }
    }

    /// `/posts/{id}`: a Makestagram owner's posts when its first child is an object under a key that is not an
    /// AppCoda field, otherwise an AppCoda feed post.
    private func postsChild(_ id: String) throws {
        guard isContainerToken else { return try unmapped() }
        var isFeedPost: Bool?
        var fields: [TreeKey: TreeValue] = [:]
        var priority: TreeValue?
        let rowsBefore = emittedRows
        recordStart = reader.bytesRead
        defer { recordStart = nil }
        try streamChildren(onDuplicate: { fields[$0] = nil }, onPriority: { priority = $0 }) { key in
            if isFeedPost == nil {
                isFeedPost = key == FirebaseKey.value || Self.appCodaFields.contains(key) || !self.isContainerToken
                if isFeedPost == false { self.recordStart = nil }
            }
            if isFeedPost == true {
                fields[key] = try self.readTree()
            } else if key == FirebaseKey.value {
                try self.unmapped()
            } else {
                try self.record(.posts, keys: [id, key])
            }
        }
        if isFeedPost == true {
            fields[FirebaseKey.priority] = priority
            try emitRecord(.feedPosts, keys: [id], tree: Self.normalized(fields))
        } else if let priority, emittedRows > rowsBefore {
            try emitUnmappedLeaf(path + [FirebaseKey.priority], priority)
        }
    }

    /// A record: one typed row when it is an object, unmapped values when it is a leaf or a leaf with a priority.
    private func record(_ table: TreeTable, keys: [String]) throws {
        guard isContainerToken else { return try unmapped() }
        let outerStart = recordStart
        recordStart = reader.bytesRead
        defer { recordStart = outerStart }
        guard let tree = try readTree() else { return }
        try emitRecord(table, keys: keys, tree: tree)
    }

    private func emitRecord(_ table: TreeTable, keys: [String], tree: TreeValue?) throws {
        guard let tree else { return }
        guard case .object(let fields) = tree, fields[FirebaseKey.value] == nil else {
            return try emitUnmapped(tree)
        }
        try beforeEmit()
        try loader.appendRow(table) { row in try table.encodeRecord(keys: keys, fields: fields, into: &row) }
    }

    /// A `true` under a key (a like, a follow); anything else there is kept as unmapped values.
    private func edge(_ table: TreeTable, keys: [String]) throws {
        guard reader.token == .true else { return try unmapped() }
        try beforeEmit()
        try loader.appendRow(table) { row in
            try row.append(keys[0])
            try row.append(keys[1])
        }
    }

    /// The current value, streamed leaf by leaf into `unmapped_values`.
    private func unmapped() throws {
        if isContainerToken {
            return try streamChildren { _ in try self.unmapped() }
        }
        guard let value = try leafValue() else { return }
        try emitUnmappedLeaf(path, value)
    }

    private func emitUnmapped(_ tree: TreeValue) throws {
        for (leafPath, value) in tree.leaves(prefix: path) {
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
        for (priorityPath, value) in pending { try emitUnmappedLeaf(priorityPath, value) }
    }

    /// Streams the children of the current object or array to `body`; an object's `.priority` is held until it
    /// has a child, and dropped if it never gets one.
    /// `onPriority`, when given, takes the object's priority instead.
    private func streamChildren(
        onDuplicate: ((String) -> Void)? = nil, onPriority: ((TreeValue) -> Void)? = nil,
        _ body: @escaping (String) throws -> Void
    ) throws {
        let depth = path.count
        let rowsBefore = emittedRows
        try forEachChild(onDuplicate: onDuplicate) { key in
            guard key == FirebaseKey.priority else { return try body(key) }
            guard let value = try self.leafValue() else { return }
            if let onPriority { return onPriority(value) }
            self.pendingPriorities.removeAll { $0.path.count == depth + 1 }
            self.pendingPriorities.append((self.path, value))
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

    /// The current value as an in-memory tree, nil when it vanishes (null, empty, only a priority) or is
    /// rejected.
    private func readTree() throws -> TreeValue? {
        guard isContainerToken else { return try leafValue() }
        var children: [TreeKey: TreeValue] = [:]
        try forEachChild(onDuplicate: { children[$0] = nil }) { key in
            if let recordStart = self.recordStart,
                self.reader.bytesRead - recordStart > self.options.maximumRecordBytes
            {
                throw StorageError(
                    .malformedInput,
                    "the record at \(Self.describe(self.path.prefix(3))) is larger than "
                        + "\(self.options.maximumRecordBytes >> 20) MB; records this large are not supported",
                    context: "reading \(self.reader.pathDescription)")
            }
            children[key] = try self.readTree()
        }
        return Self.normalized(children)
    }

    /// An object that only has a priority is an empty node, which vanishes.
    private static func normalized(_ children: [TreeKey: TreeValue]) -> TreeValue? {
        if children.isEmpty || (children.count == 1 && children[FirebaseKey.priority] != nil) { return nil }
        return .object(children)
    }

    /// The current scalar as a leaf, nil when it is rejected.
    private func leafValue() throws -> TreeValue? {
        switch reader.token {
        case .string:
            let text = reader.text
            if text.count > Self.maximumStringBytes {
                try reject("a string of \(text.count) bytes, over Firebase's 10 MB limit")
                return nil
            }
            if text.contains(0) {
                try reject("a string with a NUL character (U+0000), which PostgreSQL text cannot hold")
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

    private var isContainerToken: Bool {
        reader.token == .objectStart || reader.token == .arrayStart
    }

    /// Calls `body` for each child of the object or array the current token opens, with `path` extended by the
    /// child's key and the reader on the child's first token. Nulls vanish; bad keys, paths too deep or too long
    /// and misplaced `.priority`/`.value` are rejected; a repeated key's earlier occurrence is removed.
    private func forEachChild(onDuplicate: ((String) -> Void)? = nil, _ body: (String) throws -> Void) throws {
        var keys = KeyTracker()
        var hasValue = false
        var hasChildren = false
        while let key = try reader.nextChild() {
            if let problem = FirebaseKey.problem(with: key) {
                try reject(problem, at: path + [key])
                continue
            }
            if keys.insert(key) {
                try duplicate(key)
                onDuplicate?(key)
            }
            if options.mode == .merge, path == options.at {
                // Firebase's update: each child the file names replaces the store's child whole (null deletes it).
                try loader.flush()
                report.rowsReplaced += try deleteRows(path + [key]).values.reduce(0, +)
            }
            if reader.token == .null { continue }
            if path.count + 1 > Self.maximumDepth {
                try reject("deeper than Firebase's \(Self.maximumDepth) levels", at: path + [key])
                continue
            }
            if pathByteCount + key.utf8.count + 1 > Self.maximumPathBytes {
                try reject("a path longer than Firebase's \(Self.maximumPathBytes) bytes", at: path + [key])
                continue
            }
            switch key {
            case FirebaseKey.priority:
                guard reader.token == .string || reader.token == .number else {
                    try reject("a priority must be a string or a number", at: path + [key])
                    continue
                }
            case FirebaseKey.value:
                guard !isContainerToken, !hasChildren else {
                    try reject("\".value\" must be a leaf, beside nothing but \".priority\"", at: path + [key])
                    continue
                }
                hasValue = true
            default:
                guard !hasValue else {
                    try reject("a node with a \".value\" cannot have children", at: path + [key])
                    continue
                }
                hasChildren = true
            }
            path.append(key)
            pathByteCount += key.utf8.count + 1
            defer {
                path.removeLast()
                pathByteCount -= key.utf8.count + 1
            }
            try body(key)
        }
    }

    /// A key met twice in one object: the last occurrence wins, so what the earlier one stored goes.
    private func duplicate(_ key: String) throws {
        let fullPath = path + [key]
        report.warningCount += 1
        if report.warnings.count < Self.maximumWarningsKept {
            report.warnings.append(.init(
                path: Self.describe(fullPath[...]),
                message: "duplicate key at \(reader.position): the last occurrence wins"))
        }
        pendingPriorities.removeAll { $0.path.starts(with: fullPath) }
        try loader.flush()
        for (table, count) in try deleteRows(fullPath) {
            deletedRows[table, default: 0] += count
        }
    }

    // MARK: Rejects

    /// Records a reject of the current value (consuming it) and aborts when there are more than allowed.
    private func reject(_ reason: String, at rejectPath: [String]? = nil) throws {
        let value = try captureValue()
        let rejected = ImportReject(path: Self.describe((rejectPath ?? path)[...]), reason: reason, value: value)
        report.rejects.append(rejected)
        try onReject(rejected)
        guard report.rejects.count > options.maximumRejects else { return }
        var error = StorageError(
            .malformedInput, "rejected \(rejected.path): \(reason)",
            hint: options.maximumRejects == 0
                ? "--max-rejects N lets up to N rejected values through (they are listed and written to the rejects file)"
                : "more than --max-rejects \(options.maximumRejects) values were rejected",
            context: "reading \(rejected.path)")
        error.inputPosition = reader.position
        throw error
    }

    /// The current value as compact JSON (consumed), cut at 1 MB.
    private func captureValue() throws -> String {
        var out: [UInt8] = []
        var needsComma: [Bool] = []
        let startDepth = reader.depth - (isContainerToken ? 1 : 0)
        var isTruncated = false
        func write(_ bytes: some Sequence<UInt8>) {
            guard !isTruncated else { return }
            out.append(contentsOf: bytes)
            if out.count > Self.maximumRejectValueBytes { isTruncated = true }
        }
        func beforeValue() {
            if let last = needsComma.last {
                if last { write([UInt8(ascii: ",")]) }
                needsComma[needsComma.count - 1] = true
            }
        }
        var afterKey = false
        while true {
            let token = reader.token
            switch token {
            case .objectStart, .arrayStart:
                if !afterKey { beforeValue() }
                write([UInt8(ascii: token == .objectStart ? "{" : "[")])
                needsComma.append(false)
            case .objectEnd, .arrayEnd:
                needsComma.removeLast()
                write([UInt8(ascii: token == .objectEnd ? "}" : "]")])
            case .key:
                beforeValue()
                var quoted: [UInt8] = []
                JSONTextWriter.appendQuoted(reader.text, to: &quoted)
                write(quoted + [UInt8(ascii: ":")])
            case .string:
                if !afterKey { beforeValue() }
                var quoted: [UInt8] = []
                JSONTextWriter.appendQuoted(UnsafeBufferPointer(rebasing: reader.text.prefix(Self.maximumRejectValueBytes)), to: &quoted)
                write(quoted)
            case .number:
                if !afterKey { beforeValue() }
                write(JavaScriptNumber.format(reader.number).utf8)
            case .true, .false, .null:
                if !afterKey { beforeValue() }
                write(token == .true ? "true".utf8 : token == .false ? "false".utf8 : "null".utf8)
            case .end:
                break
            }
            afterKey = token == .key
            if reader.depth <= startDepth, token != .key { break }
            try reader.next()
        }
        return String(decoding: out, as: UTF8.self) + (isTruncated ? "…" : "")
    }

    static func describe(_ path: ArraySlice<String>) -> String {
        "/" + path.joined(separator: "/")
    }
}

/// Tells whether a key was already seen in one object, keeping only the keys' hashes (8 bytes a key, for the
/// objects being read). A hash collision reports a duplicate that is not one, which costs a warning and a
/// DELETE that finds nothing: no value is lost.
struct KeyTracker {
    private var hashes: Set<Int> = []

    /// Records `key`; true when it was seen before.
    mutating func insert(_ key: String) -> Bool {
        !hashes.insert(key.hashValue).inserted
    }
}

extension Duration {
    /// The duration in seconds, as a double.
    var seconds: Double {
        let (whole, fraction) = components
        return Double(whole) + Double(fraction) * 1e-18
    }
}
