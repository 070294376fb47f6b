import FirebaseTree
import Foundation
internal import PostgresClient

/// A write of the Realtime Database's own verbs at one path, as `firebase database:set|update|push|remove` and
/// the SDKs make them.
public enum TreeWrite: Sendable {
    /// Firebase's set: the node becomes this JSON document (`null` removes it).
    case set(json: String)
    /// Firebase's update: each child the JSON object names becomes its value (`null` removes it); the others stay.
    case update(json: String)
    /// Firebase's push: a new child under a fresh push ID becomes this JSON document.
    case push(json: String)
    /// Firebase's remove: the node and everything below it go.
    case remove
}

/// What a write did.
public struct WriteReport: Sendable {
    /// The path written (for `push`, the new child's).
    public var path: [String]
    /// Rows stored.
    public var rowsWritten: Int
    /// Rows the write removed or replaced.
    public var rowsRemoved: Int
}

/// What a write verb stores: each node's path and JSON, in the mode import stores them with, and the path the
/// write reports (a push's new child).
package struct PlannedWrite {
    /// The nodes to store, each by its path and JSON.
    package var sets: [(path: [String], json: String)]
    /// How import stores them (an update's children merge into their node).
    package var mode: ImportOptions.Mode
    /// The path the write reports.
    package var reportedPath: [String]
}

extension TreeWrite {
    /// Reads the write's JSON as Firebase reads it, without a database: the nodes it stores, or the error import's
    /// rules give (a bad key or value, an update that is no object or whose keys overlap, a misplaced `.value`).
    package func plan(at path: [String]) throws -> PlannedWrite {
        for key in path {
            if let problem = FirebaseKey.problem(withNodeKey: key) {
                throw StorageError(.invalidValue, "\"\(key)\" cannot be a Firebase key: \(problem)")
            }
        }
        switch self {
        case .set(let json):
            return PlannedWrite(
                sets: [(path, try TreeImport.lastValuesWinning(json, at: path))], mode: .replace, reportedPath: path)
        case .remove:
            return PlannedWrite(sets: [(path, "null")], mode: .replace, reportedPath: path)
        case .push(let json):
            let child = path + [PushIDGenerator.shared.next()]
            return PlannedWrite(
                sets: [(child, try TreeImport.lastValuesWinning(json, at: child))], mode: .replace, reportedPath: child)
        case .update(let json):
            let children = try TreeImport.updatedPaths(json: json, under: path)
            guard children.allSatisfy({ $0.path.count == 1 }) else {
                return PlannedWrite(
                    sets: children.map { (path + $0.path, TreeImport.json($0.value)) }, mode: .replace,
                    reportedPath: path)
            }
            // One merge of the node's children, as `import --mode merge` does it.
            var writer = JSONTextWriter(options: .init(rendersArrays: false))
            writer.beginObject()
            for (path, value) in children {
                writer.key(path[0])
                if let value { writer.value(value) } else { writer.null() }
            }
            writer.endObject()
            return PlannedWrite(
                sets: children.isEmpty ? [] : [(path, String(decoding: writer.bytes, as: UTF8.self))], mode: .merge,
                reportedPath: path)
        }
    }
}

extension TreeImport {
    /// `Store.write`: see there.
    func write(_ write: TreeWrite, at path: [String], allowsEmptying: Bool = false) throws -> WriteReport {
        // Storage throws one error type: a value that is no JSON is a StorageError too.
        let plan = try StorageError.converting { try write.plan(at: path) }
        let nodes = plan.sets.map { NodeWrite(path: $0.path, json: $0.json, mode: plan.mode) }
        let (written, removed) = try store(nodes, allowsEmptying: allowsEmptying)
        return WriteReport(path: plan.reportedPath, rowsWritten: written, rowsRemoved: removed)
    }

    /// One node a write stores: its path, its JSON (its children's, for a merge), and how.
    struct NodeWrite {
        var path: [String]
        var json: String
        var mode: ImportOptions.Mode
        /// For a merge, the children its JSON names when the writer knows them: deleted together first.
        var children: [String]?
    }

    /// Stores `nodes` (disjoint paths) in one transaction (a savepoint inside the caller's), with every kept copy
    /// settled; the rows written and removed. Refused when it would empty the store, unless `allowsEmptying`.
    func store(_ nodes: [NodeWrite], allowsEmptying: Bool) throws -> (written: Int, removed: Int) {
        try StorageError.converting {
            try connection.withTransaction {
                // Before the record is read: two writes into one record must not both start from its old value.
                try treeRows.lockTree()
                // A whole-tree replace truncates rather than counting what it deletes: counted first.
                let replacesWholeTree = nodes.contains { $0.mode == .replace && $0.path.isEmpty }
                let rowsBefore = replacesWholeTree ? try treeRowCount() : 0
                var (written, removed) = (0, 0)
                for node in nodes {
                    let counts = try store(node.json, at: node.path, mode: node.mode, children: node.children)
                    written += counts.0
                    removed += counts.1
                }
                if replacesWholeTree { removed = rowsBefore }
                // Only a write that removed rows can have emptied a store that held some; asking every table
                // whether it is empty is a statement to every shard on Citus (100 ms for a first one there).
                if removed > 0, !allowsEmptying, try treeRows.isEmpty() {
                    let error = StorageError(
                        .refused, "this write would delete everything the store holds",
                        hint: "Nothing was changed. If emptying the store is what you want, allow it.")
                    throw error.remedied(.allowEmptying)
                }
                return (written, removed)
            }
        }
    }

    /// Stores `json` at `path` (its children, for `.merge`), rewriting the record that holds the path if there
    /// is one; the rows written and removed.
    private func store(_ json: String, at path: [String], mode: ImportOptions.Mode, children: [String]? = nil) throws
        -> (Int, Int)
    {
        var path = path
        var json = json
        var mode = mode
        if !path.isEmpty, let record = try treeRows.recordPath(holding: path, orIs: true) {
            json = try rewrittenRecord(record, changing: Array(path[record.count...]), with: json, mode: mode)
            path = record
            mode = .replace
        }
        let report: ImportReport
        do {
            var options = ImportOptions(mode: mode, at: path, allowsEmptying: true)
            options.isWrite = true
            if mode == .merge, let children { options.namedChildren = .deletedFirst(children) }
            report = try importTree(from: MemorySource(json), options: options)
        } catch var error as StorageError {
            // A write has no rejects to allow: the import's hint about letting some through does not apply.
            error.hint = nil
            error.remedy = nil
            throw error
        }
        return (report.lines.reduce(0) { $0 + $1.rowsImported }, report.rowsReplaced)
    }

    /// Stores the children of /posts `ids` again, each from its own export and as its children say (a node
    /// import of it at its place, which reshapes it if it must), in the caller's transaction: the repair of the
    /// `posts_shape` check, and what a write below a child of /posts does for it. The rows deleted and stored
    /// per table.
    func restorePosts(_ ids: [String]) throws -> (deleted: [TreeTable: Int], stored: [TreeTable: Int]) {
        guard let root = TreeTable.feedPosts.rootKey else { return ([:], [:]) }
        var deleted: [TreeTable: Int] = [:], stored: [TreeTable: Int] = [:]
        for id in ids {
            let file = try StorageError.converting { try TemporaryFile() }
            _ = try export.exportTree(at: [root, id], options: .init(rendersArrays: false)) { bytes in
                try file.append(UnsafeRawBufferPointer(bytes))
            }
            try file.flush()
            let counts = try treeRows.rowCounts(under: [root, id])
            let report = try importTree(
                from: TemporaryFile.Reader(file),
                options: ImportOptions(mode: .replace, maximumRejects: .max, at: [root, id], allowsEmptying: true))
            deleted.merge(counts, uniquingKeysWith: +)
            for line in report.lines {
                if let table = TreeTable.allCases.first(where: { $0.name == line.table }) {
                    stored[table, default: 0] += line.rowsImported
                }
            }
        }
        return (deleted, stored)
    }

    /// Stores again the children of /posts a write below them may have given another shape (`restorePosts`):
    /// those among `ids` (nil: any) that `posts_misshapen` lists.
    func restoreMisshapenPosts(among ids: [String]?) throws {
        if ids?.isEmpty == true { return }
        let misshapen = try connection.query("SELECT post_id FROM posts_misshapen(\(ids)) ORDER BY 1").map {
            try $0.decode(String.self, at: 0)
        }
        _ = try restorePosts(misshapen)
    }

    /// `value` as JSON for the importer: `null` for nothing, integer-keyed objects as objects.
    static func json(_ value: TreeValue?) -> String {
        var writer = JSONTextWriter(options: .init(rendersArrays: false))
        if let value { writer.value(value) } else { writer.null() }
        return String(decoding: writer.bytes, as: UTF8.self)
    }

    /// `json` with each object's repeated keys reduced to the last one's value, as `JSON.parse` (and so Firebase)
    /// reads it: a bad key in an earlier occurrence was never written. A `.value` beside other children, or a
    /// `.priority` that is no leaf, is refused as import refuses it (written out, the children would vanish).
    static func lastValuesWinning(_ json: String, at path: [String]) throws -> String {
        let value = try TreeValue.parse(json: json, normalizing: false)
        try refusePseudoChildProblems(in: value, at: path)
        return Self.json(value)
    }

    /// Throws import's reject, as a write's error, for the first misplaced `.value` or `.priority` in `value`
    /// (the node at `path`).
    static func refusePseudoChildProblems(in value: TreeValue?, at path: [String]) throws {
        guard let (place, problem) = value?.pseudoChildProblem(at: path) else { return }
        let shown = FirebaseKey.describe(path: place)
        throw StorageError(.invalidValue, "rejected \(shown): \(problem)", context: "reading \(shown)")
    }

    /// Rows in the tree's tables.
    private func treeRowCount() throws -> Int {
        let counts = TreeTable.names.map { "(SELECT count(*) FROM \(identifier: $0))" as Query }
        return try connection.query("SELECT \(counts.joined(separator: " + "))")[0].decode(Int.self, at: 0)
    }

    /// The children an update's JSON object names, each by its path below the node (a key may be a path, as
    /// in Firebase's `update`: `{"alice/username": "al"}`), with its value as JSON. Refused as Firebase refuses
    /// them: not an object, a key naming no child or holding a bad one, one path below another, a misplaced
    /// `.value` or `.priority` in a value (named by its path under `node`, the updated node).
    static func updatedPaths(json text: String, under node: [String] = []) throws -> [(
        path: [String], value: TreeValue?
    )] {
        guard let children = try TreeValue.membersKeepingNulls(json: text) else {
            throw StorageError(
                .invalidValue, "an update takes a JSON object of the children to write",
                hint: "Write {\"child\": value}, or use set to replace the node.")
        }
        var updates: [(path: [String], value: TreeValue?)] = []
        for (key, value) in children {
            let path = FirebaseKey.keys(ofPath: key)
            guard !path.isEmpty else { throw StorageError(.invalidValue, "the update's key \"\(key)\" names no child") }
            for part in path {
                if let problem = FirebaseKey.problem(withNodeKey: part) {
                    throw StorageError(.invalidValue, "the update's key \"\(key)\" is not a Firebase path: \(problem)")
                }
            }
            try refusePseudoChildProblems(in: value, at: node + path)
            updates.append((path, value))
        }
        let sorted = updates.map(\.path).sorted { FirebaseKey.pathPrecedes($0, $1) }
        for (earlier, later) in zip(sorted, sorted.dropFirst())
        where FirebaseKey.isPath(later[...], atOrBelow: earlier[...]) {
            throw StorageError(
                .invalidValue,
                "the update's keys \"\(earlier.joined(separator: "/"))\" and \"\(later.joined(separator: "/"))\" "
                    + "overlap", hint: "Firebase refuses an update that writes a node and a path inside it.")
        }
        return updates
    }

    /// The record at `record` as JSON after `json` is set (or merged, for `.merge`) at `below` inside it.
    func rewrittenRecord(
        _ record: [String], changing below: [String], with json: String, mode: ImportOptions.Mode
    ) throws -> String {
        var tree = try exportedValue(at: record)
        if mode == .merge {
            for (path, value) in try Self.updatedPaths(json: json) {
                tree = TreeValue.setting(value.flatMap(\.normalized), at: below + path, in: tree)
            }
        } else {
            tree = TreeValue.setting(try TreeValue.parse(json: json), at: below, in: tree)
        }
        var writer = JSONTextWriter(options: .init(rendersArrays: false))
        if let tree { writer.value(tree) } else { writer.null() }
        return String(decoding: writer.bytes, as: UTF8.self)
    }
}

extension TreeValue {
    /// The members of a JSON object by key, a `null` one as nil ("remove it", in an update), a repeated key's
    /// last value winning; nil when the document is not an object.
    static func membersKeepingNulls(json text: String) throws -> [(key: String, value: TreeValue?)]? {
        var reader = JSONReader(source: MemorySource(text))
        guard try reader.next() == .objectStart else { return nil }
        var members: [(key: String, value: TreeValue?)] = []
        var index: [TreeKey: Int] = [:]
        while let key = try reader.nextChild() {
            let value = try read(&reader, normalizing: false)
            if let earlier = index[TreeKey(key)] {
                members[earlier].value = value
            } else {
                index[TreeKey(key)] = members.count
                members.append((key, value))
            }
        }
        try reader.next()
        guard reader.token == .end else { return nil }
        return members
    }

    /// `tree` with `value` at `path` (nil removes it); objects left empty vanish, as in Firebase.
    static func setting(_ value: TreeValue?, at path: some Collection<String>, in tree: TreeValue?) -> TreeValue? {
        guard let key = path.first else { return value.flatMap(\.normalized) }
        // Removing a path that does not exist changes nothing: a leaf above it stays.
        if value == nil, let tree, tree.children == nil { return tree }
        var children = tree?.children ?? [:]
        children[key] = setting(value, at: path.dropFirst(), in: children[key])
        return TreeValue.object(children).normalized
    }

    /// This value with empty objects (the removed children's markers included) gone; nil when nothing is left.
    var normalized: TreeValue? {
        guard case .object(let children) = self else { return self }
        let kept = children.compactMapValues(\.normalized)
        if kept.isEmpty || (kept.count == 1 && kept[FirebaseKey.priority] != nil) { return nil }
        return .object(kept)
    }
}
