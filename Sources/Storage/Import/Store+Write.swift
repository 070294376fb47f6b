import FirebaseTree
import Foundation

/// A write of the Realtime Database's own verbs at one path, as `firebase database:set|update|push|remove` and
/// the SDKs make them.
public enum TreeWrite: Sendable {
    /// `set`: the node becomes this JSON document (`null` removes it).
    case set(json: String)
    /// `update`: each child the JSON object names becomes its value (`null` removes it); the others stay.
    case update(json: String)
    /// `push`: a new child under a fresh push ID becomes this JSON document.
    case push(json: String)
    /// `remove`: the node and everything below it go.
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

extension Store {
    /// Writes at `path` in one transaction, with import's validation (keys, limits, rejects abort) and mapping:
    /// the node's rows are replaced, or its named children's for `update`. A path inside a typed record (a
    /// post's `poster/username`) rewrites that record: it is read, changed in memory (it is small) and stored
    /// again, so the record stays one row.
    ///
    /// ```swift
    /// try store.write(.set(json: #"{"username": "alice"}"#), at: ["users", "alice"])
    /// ```
    public func write(_ write: TreeWrite, at path: [String]) throws -> WriteReport {
        var path = path
        for key in path {
            if let problem = FirebaseKey.problem(with: key) ?? (key.hasPrefix(".") ? "a priority is not a node" : nil) {
                throw StorageError(.invalidValue, "\"\(key)\" cannot be a Firebase key: \(problem)")
            }
        }
        var json: String
        var mode = ImportOptions.Mode.replace
        switch write {
        case .set(let text): json = text
        case .update(let text):
            json = text
            mode = .merge
        case .push(let text):
            path.append(PushIDGenerator.shared.next())
            json = text
        case .remove: json = "null"
        }
        return try StorageError.converting {
            try connection.withTransaction {
                // Before the record is read: two writes into one record must not both start from its old value.
                try lockTree()
                if !path.isEmpty, let record = try recordPath(holding: path, orIs: true) {
                    json = try rewrittenRecord(record, changing: Array(path[record.count...]), with: json, mode: mode)
                    path = record
                    mode = .replace
                }
                let report: ImportReport
                do {
                    report = try importTree(
                        from: MemorySource(json), options: ImportOptions(mode: mode, at: path, allowsEmptying: true))
                } catch var error as StorageError {
                    // A write has no rejects to allow: the import's hint about letting some through does not apply.
                    error.hint = nil
                    error.remedy = nil
                    throw error
                }
                let written = report.lines.reduce(0) { $0 + $1.rowsImported }
                return WriteReport(path: path, rowsWritten: written, rowsRemoved: report.rowsReplaced)
            }
        }
    }

    /// The record at `record` as JSON after `json` is set (or merged, for `.merge`) at `below` inside it.
    private func rewrittenRecord(
        _ record: [String], changing below: [String], with json: String, mode: ImportOptions.Mode
    ) throws -> String {
        var bytes: [UInt8] = []
        _ = try exportTree(at: record, options: .init(rendersArrays: false)) { bytes.append(contentsOf: $0) }
        var tree = try TreeValue.parse(json: String(decoding: bytes, as: UTF8.self), normalizing: false)
        if mode == .merge {
            guard let children = try TreeValue.childrenKeepingNulls(json: json) else {
                throw StorageError(.invalidValue, "an update takes a JSON object of the children to write")
            }
            for (key, value) in children { tree = TreeValue.setting(value, at: below + [key.string], in: tree) }
        } else {
            tree = TreeValue.setting(try TreeValue.parse(json: json), at: below, in: tree)
        }
        var writer = JSONTextWriter(options: .init(rendersArrays: false))
        if let tree { writer.value(tree) } else { writer.null() }
        return String(decoding: writer.bytes, as: UTF8.self)
    }
}

extension TreeValue {
    /// The children of a JSON object, a `null` one as nil ("remove it", in an update); nil when the document is
    /// not an object.
    static func childrenKeepingNulls(json text: String) throws -> [TreeKey: TreeValue?]? {
        var reader = JSONReader(source: MemorySource(text))
        guard try reader.next() == .objectStart else { return nil }
        var children: [TreeKey: TreeValue?] = [:]
        while let key = try reader.nextChild() { children[TreeKey(key)] = .some(try read(&reader, normalizing: true)) }
        try reader.next()
        return children
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
