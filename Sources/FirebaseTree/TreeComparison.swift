/// Where two Firebase trees part, as `TreeComparison` finds it.
public struct TreeDifference: Sendable, Equatable {
    /// How the trees part at `path`.
    public enum Kind: String, Sendable, CaseIterable {
        /// In the source, not in the store.
        case missing
        /// In the store, not in the source.
        case extra
        /// A leaf whose values differ, or a leaf on one side and an object on the other.
        case changed
        /// In the source only, because import refuses it (`reason` says why): it never reached the store.
        case rejected
    }

    /// The path, keys from the root: the shallowest one present on one side only, or a leaf's.
    public var path: [String]
    /// How the trees part there.
    public var kind: Kind
    /// The source's value there as compact JSON, nil when it has none.
    public var source: String?
    /// The store's value there as compact JSON, nil when it has none.
    public var store: String?
    /// Why import refuses the source's value (`.rejected` only).
    public var reason: String?
    /// Whether `source` or `store` was cut at `TreeComparison.valueLimit` bytes (no longer valid JSON then).
    public var isCut = false

    /// A difference; `source` and `store` as compact JSON.
    public init(path: [String], kind: Kind, source: String?, store: String?, reason: String? = nil, isCut: Bool = false)
    {
        self.path = path
        self.kind = kind
        self.source = source
        self.store = store
        self.reason = reason
        self.isCut = isCut
    }
}

/// Compares two Firebase JSON trees as they stream, under the Realtime Database's semantics: arrays are
/// integer-keyed objects, nulls and empty objects do not exist, numbers are doubles (`1` equals `1.0`), key order
/// and formatting do not matter, and priorities count unless ignored (a leaf with one is `{".value", ".priority"}`,
/// in either order).
///
/// Both documents are read once, side by side, holding nothing but the current path and the values of the
/// differences being reported: each object's children must come in RTDB key order (integer keys first), as the
/// Firebase console and `admin export` write them, `.priority` first. A source whose keys are out of order
/// stops the comparison with a `TreeError` of kind `.unordered` naming where (`TreeSorter` puts it in order); a
/// store side out of order is `.malformedInput`.
///
/// ```swift
/// var comparison = TreeComparison { difference in print(difference.path, difference.kind) }
/// try comparison.compare(source: &fileReader, store: &exportReader)
/// ```
public struct TreeComparison {
    /// Whether priorities are left out of the comparison.
    public var ignoresPriorities: Bool
    /// How many bytes of JSON a difference's value keeps; beyond them it is cut (and marked `isCut`).
    public var valueLimit: Int
    /// Nodes (leaves and objects) looked at on either side so far.
    public private(set) var nodesCompared = 0
    private let report: (TreeDifference) throws -> Void
    private var path: [String] = []

    /// A comparison that hands each difference to `onDifference` in RTDB order of path, as it is found.
    public init(
        ignoringPriorities: Bool = false, valueLimit: Int = 1 << 20,
        onDifference: @escaping (TreeDifference) throws -> Void
    ) {
        ignoresPriorities = ignoringPriorities
        self.valueLimit = valueLimit
        report = onDifference
    }

    /// Compares the two documents the readers are about to read, which are the node at `path` on each side.
    public mutating func compare(source: inout JSONReader, store: inout JSONReader, at path: [String] = []) throws {
        self.path = path
        try source.next()
        try store.next()
        try compareNodes(&source, &store)
        try source.next()
        try store.next()
    }

    // MARK: Nodes

    /// A node once its first tokens are read: a leaf or an object, with its priority.
    private struct Head {
        enum Body {
            /// Null, an empty object, or one holding only nulls (and a priority): no node.
            case absent
            case leaf(TreeValue)
            /// An object; the reader is on the value of the child `firstKey`.
            case object(firstKey: String)
        }
        var body: Body
        var priority: TreeValue?
    }

    /// Reads the start of the node at the reader's token: a leaf whole, an object up to its first child, a leaf
    /// with a priority (`{".value", ".priority"}`, either order) whole.
    private func head(_ reader: inout JSONReader) throws -> Head {
        switch reader.token {
        case .null:
            return Head(body: .absent)
        case .objectStart, .arrayStart:
            var priority: TreeValue?
            var key = try nextKey(&reader)
            if key == FirebaseKey.priority {
                priority = try scalar(&reader)
                key = try nextKey(&reader)
            }
            guard let key else { return Head(body: .absent, priority: priority) }
            guard key == FirebaseKey.value else { return Head(body: .object(firstKey: key), priority: priority) }
            let value = try scalar(&reader)
            if let next = try nextKey(&reader) {
                guard next == FirebaseKey.priority, priority == nil else {
                    throw TreeError(
                        .malformedInput, "\".value\" beside \"\(next)\": a leaf with a priority has no other children",
                        position: reader.position, path: reader.pathDescription)
                }
                priority = try scalar(&reader)
                if let extra = try nextKey(&reader) {
                    throw TreeError(
                        .malformedInput, "\"\(extra)\" beside \".value\": a leaf with a priority has no other children",
                        position: reader.position, path: reader.pathDescription)
                }
            }
            return Head(body: value.map { .leaf($0) } ?? .absent, priority: priority)
        default:
            return Head(body: try scalar(&reader).map { .leaf($0) } ?? .absent)
        }
    }

    /// The scalar at the reader's token; nil for null. An object where a leaf must be is refused.
    private func scalar(_ reader: inout JSONReader) throws -> TreeValue? {
        guard reader.token != .objectStart, reader.token != .arrayStart else {
            throw TreeError(
                .malformedInput, "an object where a leaf (.value or .priority) must be", position: reader.position,
                path: reader.pathDescription)
        }
        return try TreeValue.read(&reader, normalizing: false)
    }

    /// The next child's key of the object the reader is in, skipping nulls (and priorities when they are
    /// ignored), with the reader on the child's value; nil at the object's end.
    private func nextKey(_ reader: inout JSONReader) throws -> String? {
        while let key = try reader.nextChild() {
            if reader.token == .null { continue }
            if ignoresPriorities, key == FirebaseKey.priority {
                try skipCurrent(&reader)
                continue
            }
            return key
        }
        return nil
    }

    /// Reads past the value at the reader's token (`JSONReader.skipValue` skips the next one).
    private func skipCurrent(_ reader: inout JSONReader) throws {
        guard reader.token == .objectStart || reader.token == .arrayStart else { return }
        let inside = reader.depth
        while reader.depth >= inside { try reader.next() }
    }

    /// The key after `previous` in the object the reader is in, refusing one that is not after it in RTDB order
    /// (`.priority` and `.value` come first, where `head` reads them).
    private func nextKey(_ reader: inout JSONReader, after previous: String, isSource: Bool) throws -> String? {
        guard let key = try nextKey(&reader) else { return nil }
        guard key != FirebaseKey.priority, key != FirebaseKey.value, FirebaseKey.compare(previous, key) < 0 else {
            throw TreeError(
                isSource ? .unordered : .malformedInput,
                "the \(isSource ? "source" : "store")'s keys are not in RTDB order: \"\(key)\" comes after "
                    + "\"\(previous)\" in /" + path.joined(separator: "/"),
                position: reader.position, path: reader.pathDescription)
        }
        return key
    }

    /// Compares the nodes at the readers' tokens, reading both to their ends.
    private mutating func compareNodes(_ source: inout JSONReader, _ store: inout JSONReader) throws {
        nodesCompared += 1
        let sourceHead = try head(&source)
        let storeHead = try head(&store)
        switch (sourceHead.body, storeHead.body) {
        case (.absent, .absent):
            return
        case (_, .absent):
            try reportOnlyInSource(sourceHead, &source)
            return
        case (.absent, _):
            try reportOnlyInStore(storeHead, &store)
            return
        case (.leaf(let a), .leaf(let b)):
            if a != b {
                try report(TreeDifference(path: path, kind: .changed, source: json(a), store: json(b)))
            }
        case (.object(let a), .object(let b)):
            try comparePriorities(sourceHead.priority, storeHead.priority)
            try compareChildren(&source, firstKey: a, &store, firstKey: b)
            return
        default:
            let (sourceJSON, sourceCut) = try capture(sourceHead, &source)
            let (storeJSON, storeCut) = try capture(storeHead, &store)
            try report(
                TreeDifference(
                    path: path, kind: .changed, source: sourceJSON, store: storeJSON, isCut: sourceCut || storeCut))
            return
        }
        try comparePriorities(sourceHead.priority, storeHead.priority)
    }

    private func comparePriorities(_ source: TreeValue?, _ store: TreeValue?) throws {
        guard !ignoresPriorities, source != store else { return }
        let kind: TreeDifference.Kind = source == nil ? .extra : store == nil ? .missing : .changed
        try report(
            TreeDifference(
                path: path + [FirebaseKey.priority], kind: kind, source: source.map(json), store: store.map(json)))
    }

    /// Merges two objects' children by key, from the first keys their heads read.
    private mutating func compareChildren(
        _ source: inout JSONReader, firstKey: String, _ store: inout JSONReader, firstKey storeFirst: String
    ) throws {
        var sourceKey: String? = firstKey
        var storeKey: String? = storeFirst
        while sourceKey != nil || storeKey != nil {
            let order = sourceKey == nil ? 1 : storeKey == nil ? -1 : FirebaseKey.compare(sourceKey!, storeKey!)
            if order <= 0 {
                let key = sourceKey!
                path.append(key)
                if order == 0 {
                    try compareNodes(&source, &store)
                } else {
                    nodesCompared += 1
                    try reportOnlyInSource(try head(&source), &source)
                }
                path.removeLast()
                sourceKey = try nextKey(&source, after: key, isSource: true)
                if order == 0 { storeKey = try nextKey(&store, after: key, isSource: false) }
            } else {
                let key = storeKey!
                path.append(key)
                nodesCompared += 1
                try reportOnlyInStore(try head(&store), &store)
                path.removeLast()
                storeKey = try nextKey(&store, after: key, isSource: false)
            }
        }
    }

    /// Reports the source's node at `path`, which the store lacks: rejected when import refuses it, else missing.
    private func reportOnlyInSource(_ head: Head, _ source: inout JSONReader) throws {
        if case .absent = head.body { return }
        let (json, isCut) = try capture(head, &source)
        var reason = path.last.flatMap { FirebaseKey.problem(with: $0) } ?? FirebaseKey.problem(withPath: path)
        if reason == nil, case .leaf(.string(let text)) = head.body {
            reason = FirebaseKey.problem(withString: text)
        }
        try report(
            TreeDifference(
                path: path, kind: reason == nil ? .missing : .rejected, source: json, store: nil, reason: reason,
                isCut: isCut))
    }

    /// Reports the store's node at `path`, which the source lacks.
    private func reportOnlyInStore(_ head: Head, _ store: inout JSONReader) throws {
        if case .absent = head.body { return }
        let (json, isCut) = try capture(head, &store)
        try report(TreeDifference(path: path, kind: .extra, source: nil, store: json, isCut: isCut))
    }

    // MARK: Values as JSON

    private func json(_ value: TreeValue) -> String {
        var writer = JSONTextWriter()
        writer.value(value)
        writer.finish()
        return String(decoding: writer.bytes, as: UTF8.self)
    }

    /// The node whose head was read, as compact JSON of at most `valueLimit` bytes, reading the reader to its end.
    private func capture(_ head: Head, _ reader: inout JSONReader) throws -> (json: String, isCut: Bool) {
        var writer = JSONTextWriter()
        switch head.body {
        case .absent:
            return ("null", false)
        case .leaf(let value):
            guard let priority = head.priority, !ignoresPriorities else {
                writer.value(value)
                break
            }
            writer.value(.object([TreeKey(FirebaseKey.priority): priority, TreeKey(FirebaseKey.value): value]))
        case .object(let firstKey):
            writer.beginObject()
            if let priority = head.priority, !ignoresPriorities {
                writer.key(FirebaseKey.priority)
                writer.value(priority)
            }
            try copyChildren(&reader, from: firstKey, into: &writer)
        }
        writer.finish()
        let isCut = writer.bytes.count > valueLimit
        let bytes = isCut ? writer.bytes[..<valueLimit] : writer.bytes[...]
        return (String(decoding: bytes, as: UTF8.self) + (isCut ? "…" : ""), isCut)
    }

    /// Copies the value at the reader's token to `writer`, without its nulls; stops writing (and only reads)
    /// past `valueLimit` bytes.
    private func copyValue(_ reader: inout JSONReader, into writer: inout JSONTextWriter) throws {
        switch reader.token {
        case .objectStart, .arrayStart:
            writer.beginObject()
            try copyChildren(&reader, from: try nextKey(&reader), into: &writer)
        default:
            if let value = try TreeValue.read(&reader, normalizing: false) { writer.value(value) }
        }
    }

    /// Copies the children of the object the reader is in, from the one `key` names (the reader on its value),
    /// and closes the object `writer` has open for them.
    private func copyChildren(_ reader: inout JSONReader, from key: String?, into writer: inout JSONTextWriter) throws {
        var key = key
        while let current = key {
            if writer.bytes.count <= valueLimit {
                writer.key(current)
                try copyValue(&reader, into: &writer)
            } else {
                try skipCurrent(&reader)
            }
            key = try nextKey(&reader)
        }
        writer.endObject()
    }
}
