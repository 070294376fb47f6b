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
            /// A scalar import refuses (a number beyond a double), as written.
            case rejected(json: String, reason: String)
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
        case .number where !reader.number.isFinite:
            return Head(body: .rejected(json: reader.string, reason: Self.numberOutOfRange))
        default:
            return Head(body: try scalar(&reader).map { .leaf($0) } ?? .absent)
        }
    }

    static let numberOutOfRange = "a number outside the range of a double"

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
        var unordered: String?
        return try nextKey(&reader, after: &unordered, isSource: true)
    }

    /// Reads past the value at the reader's token (`JSONReader.skipValue` skips the next one).
    private func skipCurrent(_ reader: inout JSONReader) throws {
        guard reader.token == .objectStart || reader.token == .arrayStart else { return }
        let inside = reader.depth
        while reader.depth >= inside { try reader.next() }
    }

    /// The next child's key of the object the reader is in, as `nextKey(_:)` finds it, refusing a key that is
    /// not after `previous` in RTDB order (a null one too: a repeated key's last value wins, so an earlier one
    /// must not be taken for the node); `.priority` and `.value` come first, where `head` reads them.
    private func nextKey(_ reader: inout JSONReader, after previous: inout String?, isSource: Bool) throws -> String? {
        while let key = try reader.nextChild() {
            if let last = previous {
                guard key != FirebaseKey.priority, key != FirebaseKey.value, FirebaseKey.compare(last, key) < 0 else {
                    throw TreeError(
                        isSource ? .unordered : .malformedInput,
                        "the \(isSource ? "source" : "store")'s keys are not in RTDB order: \"\(key)\" comes after "
                            + "\"\(last)\" in /" + path.joined(separator: "/"),
                        position: reader.position, path: reader.pathDescription)
                }
            }
            if key != FirebaseKey.priority, key != FirebaseKey.value { previous = key }
            if reader.token == .null { continue }
            if ignoresPriorities, key == FirebaseKey.priority {
                try skipCurrent(&reader)
                continue
            }
            return key
        }
        return nil
    }

    /// Compares the nodes at the readers' tokens, reading both to their ends.
    private mutating func compareNodes(_ source: inout JSONReader, _ store: inout JSONReader) throws {
        nodesCompared += 1
        let sourceHead = try head(&source)
        let storeHead = try head(&store)
        switch (sourceHead.body, storeHead.body) {
        case (.absent, .absent):
            return
        case (.rejected, _):
            // Import refused the source's value: whatever the store holds there came from elsewhere.
            try reportOnlyInSource(sourceHead, &source)
            try reportOnlyInStore(storeHead, &store)
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
            var rejects: [TreeDifference]? = []
            let sourceValue = try capture(sourceHead, &source, rejects: &rejects)
            let storeValue = try capture(storeHead, &store)
            if sourceValue.isEmpty {
                // The source's object holds nothing (empty objects, nulls, rejects only): no node, as import reads it.
                try report(
                    TreeDifference(
                        path: path, kind: .extra, source: nil, store: storeValue.json, isCut: storeValue.isCut))
            } else {
                try report(
                    TreeDifference(
                        path: path, kind: .changed, source: sourceValue.json, store: storeValue.json,
                        isCut: sourceValue.isCut || storeValue.isCut))
            }
            for reject in rejects ?? [] { try report(reject) }
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
        var sourcePrevious: String? = firstKey
        var storePrevious: String? = storeFirst
        while sourceKey != nil || storeKey != nil {
            let order =
                switch (sourceKey, storeKey) {
                case (let source?, let store?): FirebaseKey.compare(source, store)
                case (nil, _): 1
                case (_, nil): -1
                }
            if order <= 0, let key = sourceKey {
                path.append(key)
                if order == 0 {
                    try compareNodes(&source, &store)
                } else {
                    nodesCompared += 1
                    try reportOnlyInSource(try head(&source), &source)
                }
                path.removeLast()
                sourceKey = try nextKey(&source, after: &sourcePrevious, isSource: true)
                if order == 0 { storeKey = try nextKey(&store, after: &storePrevious, isSource: false) }
            } else if let key = storeKey {
                path.append(key)
                nodesCompared += 1
                try reportOnlyInStore(try head(&store), &store)
                path.removeLast()
                storeKey = try nextKey(&store, after: &storePrevious, isSource: false)
            }
        }
    }

    /// Reports the source's node at `path`, which the store lacks: rejected when import refuses it, else missing
    /// (what import would keep of it), followed by the rejects inside it. A node that holds nothing but empty
    /// objects and nulls is no node, as import reads it.
    private func reportOnlyInSource(_ head: Head, _ source: inout JSONReader) throws {
        if case .absent = head.body { return }
        if case .rejected(let json, let reason) = head.body {
            try report(TreeDifference(path: path, kind: .rejected, source: json, store: nil, reason: reason))
            return
        }
        var reason = path.last.flatMap { FirebaseKey.problem(with: $0) } ?? FirebaseKey.problem(withPath: path)
        if reason == nil, case .leaf(.string(let text)) = head.body {
            reason = FirebaseKey.problem(withString: text)
        }
        var rejects: [TreeDifference]?
        if reason == nil { rejects = [] }
        let value = try capture(head, &source, rejects: &rejects)
        if !value.isEmpty {
            try report(
                TreeDifference(
                    path: path, kind: reason == nil ? .missing : .rejected, source: value.json, store: nil,
                    reason: reason, isCut: value.isCut))
        }
        for reject in rejects ?? [] { try report(reject) }
    }

    /// Reports the store's node at `path`, which the source lacks.
    private func reportOnlyInStore(_ head: Head, _ store: inout JSONReader) throws {
        if case .absent = head.body { return }
        let value = try capture(head, &store)
        try report(TreeDifference(path: path, kind: .extra, source: nil, store: value.json, isCut: value.isCut))
    }

    // MARK: Values as JSON

    private func json(_ value: TreeValue) -> String {
        var writer = JSONTextWriter()
        writer.value(value)
        writer.finish()
        return String(decoding: writer.bytes, as: UTF8.self)
    }

    /// The store's node whose head was read, as compact JSON of at most `valueLimit` bytes, reading the reader to
    /// its end.
    private func capture(_ head: Head, _ reader: inout JSONReader) throws -> CapturedValue {
        var noRejects: [TreeDifference]?
        return try capture(head, &reader, rejects: &noRejects, isSource: false)
    }

    /// The node whose head was read, as compact JSON of at most `valueLimit` bytes without its empty objects,
    /// reading the reader to its end. With `rejects`, what import would refuse below it (bad keys, paths too
    /// deep or long, strings it cannot keep, numbers beyond a double) is left out and listed there.
    private func capture(
        _ head: Head, _ reader: inout JSONReader, rejects: inout [TreeDifference]?, isSource: Bool = true
    ) throws -> CapturedValue {
        var writer = LazyObjectWriter(limit: valueLimit)
        switch head.body {
        case .absent:
            return CapturedValue(json: "null", isCut: false, isEmpty: true)
        case .rejected(let json, _):
            return CapturedValue(json: json, isCut: false, isEmpty: false)
        case .leaf(let value):
            if let priority = head.priority, !ignoresPriorities {
                writer.leaf(
                    key: nil, .object([TreeKey(FirebaseKey.priority): priority, TreeKey(FirebaseKey.value): value]))
            } else {
                writer.leaf(key: nil, value)
            }
        case .object(let firstKey):
            writer.open(key: nil)
            if let priority = head.priority, !ignoresPriorities { writer.setPriority(priority) }
            var path = self.path
            try copyChildren(&reader, from: firstKey, at: &path, into: &writer, rejects: &rejects, isSource: isSource)
            writer.close()
        }
        return writer.captured
    }

    /// Copies the children of the object the reader is in, from the one `key` names (the reader on its value),
    /// and leaves the reader at the object's end.
    private func copyChildren(
        _ reader: inout JSONReader, from first: String?, at path: inout [String], into writer: inout LazyObjectWriter,
        rejects: inout [TreeDifference]?, isSource: Bool
    ) throws {
        var key = first
        var previous = first == FirebaseKey.priority || first == FirebaseKey.value ? nil : first
        while let current = key {
            path.append(current)
            defer { path.removeLast() }
            if current == FirebaseKey.priority {
                if let value = try TreeValue.read(&reader, normalizing: false), !ignoresPriorities {
                    writer.setPriority(value)
                }
            } else if rejects != nil, current != FirebaseKey.value,
                let reason = FirebaseKey.problem(with: current) ?? FirebaseKey.problem(withPath: path)
            {
                var inner = LazyObjectWriter(limit: Self.heldRejectLimit)
                var none: [TreeDifference]?
                try copyValue(&reader, key: nil, at: &path, into: &inner, rejects: &none, isSource: isSource)
                if !inner.captured.isEmpty { try hold(reject(at: path, inner.captured, reason), in: &rejects) }
            } else {
                try copyValue(&reader, key: current, at: &path, into: &writer, rejects: &rejects, isSource: isSource)
            }
            key = try nextKey(&reader, after: &previous, isSource: isSource)
        }
    }

    /// Copies the value at the reader's token (the child `key` of the object being written, at `path`).
    private func copyValue(
        _ reader: inout JSONReader, key: String?, at path: inout [String], into writer: inout LazyObjectWriter,
        rejects: inout [TreeDifference]?, isSource: Bool
    ) throws {
        switch reader.token {
        case .objectStart, .arrayStart:
            writer.open(key: key)
            var none: String?
            let first = try nextKey(&reader, after: &none, isSource: isSource)
            try copyChildren(&reader, from: first, at: &path, into: &writer, rejects: &rejects, isSource: isSource)
            writer.close()
        case .number where !reader.number.isFinite:
            let json = reader.string
            if rejects != nil {
                let value = CapturedValue(json: json, isCut: false, isEmpty: false)
                try hold(reject(at: path, value, Self.numberOutOfRange), in: &rejects)
            } else {
                writer.raw(key: key, json)
            }
        default:
            guard let value = try TreeValue.read(&reader, normalizing: false) else { return }
            if rejects != nil, case .string(let text) = value, let reason = FirebaseKey.problem(withString: text) {
                var inner = LazyObjectWriter(limit: Self.heldRejectLimit)
                inner.leaf(key: nil, value)
                try hold(reject(at: path, inner.captured, reason), in: &rejects)
                return
            }
            writer.leaf(key: key, value)
        }
    }

    /// Bytes of a reject's value kept while the missing node around it is read, and how many such rejects wait
    /// to be reported after it (in path order); past that many they are reported at once, so that a missing
    /// subtree full of rejects costs bounded memory.
    static let heldRejectLimit = 1 << 16
    static let heldRejects = 10_000

    private func hold(_ reject: TreeDifference, in rejects: inout [TreeDifference]?) throws {
        if let held = rejects, held.count >= Self.heldRejects { return try report(reject) }
        rejects?.append(reject)
    }

    private func reject(at path: [String], _ value: CapturedValue, _ reason: String) -> TreeDifference {
        TreeDifference(path: path, kind: .rejected, source: value.json, store: nil, reason: reason, isCut: value.isCut)
    }
}

/// A node's value as `TreeComparison` captures it for a difference.
private struct CapturedValue {
    /// Compact JSON, cut at the comparison's `valueLimit` bytes.
    var json: String
    var isCut: Bool
    /// Whether it holds no leaf: only empty objects, nulls and (on the source's side) rejects.
    var isEmpty: Bool
}

/// Writes an object as compact JSON, opening each object only once something is written in it, so that empty
/// objects (and ones holding only a priority) leave no trace; stops writing past `limit` bytes.
private struct LazyObjectWriter {
    private var writer = JSONTextWriter()
    private let limit: Int
    /// Objects opened but not written yet, outermost first: each one's key (nil for a value of its own) and
    /// priority.
    private var pending: [(key: String?, priority: TreeValue?)] = []
    private var hasLeaf = false

    init(limit: Int) { self.limit = limit }

    mutating func open(key: String?) { pending.append((key, nil)) }

    /// The priority of the innermost object open; written with it, if it is.
    mutating func setPriority(_ priority: TreeValue) {
        if !pending.isEmpty {
            pending[pending.count - 1].priority = priority
        } else if writer.bytes.count <= limit {
            writer.key(FirebaseKey.priority)
            writer.value(priority)
        }
    }

    mutating func leaf(key: String?, _ value: TreeValue) {
        hasLeaf = true
        guard writer.bytes.count <= limit else { return }
        flush()
        if let key { writer.key(key) }
        writer.value(value)
    }

    /// A number beyond a double, shown inside a value already rejected as a whole: as a string of its text.
    mutating func raw(key: String?, _ json: String) {
        leaf(key: key, .string(json))
    }

    mutating func close() {
        if pending.popLast() == nil { writer.endObject() }
    }

    private mutating func flush() {
        for (key, priority) in pending {
            if let key { writer.key(key) }
            writer.beginObject()
            if let priority {
                writer.key(FirebaseKey.priority)
                writer.value(priority)
            }
        }
        pending = []
    }

    var captured: CapturedValue {
        var writer = writer
        writer.finish()
        let isCut = writer.bytes.count > limit
        let bytes = isCut ? writer.bytes[..<limit] : writer.bytes[...]
        return .init(
            json: hasLeaf ? String(decoding: bytes, as: UTF8.self) + (isCut ? "…" : "") : "null", isCut: isCut,
            isEmpty: !hasLeaf)
    }
}
