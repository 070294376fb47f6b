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
    /// For a part of a difference `sync` splits into writes (a node the source alone holds, written record by
    /// record; a leaf the store holds where the source has an object, deleted before the object is written):
    /// the one difference `verify` reports instead. Counted once per group, sync's differences are verify's.
    public var group: Group?

    /// One difference as `verify` reports it: its path, and its kind (the last part of a group says it).
    public struct Group: Sendable, Equatable {
        /// Where `verify` reports it.
        public var path: [String]
        /// What `verify` calls it.
        public var kind: Kind
    }

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
    /// What a comparison that brings the store to the source (`sync`) is told, and tells: the nodes to write.
    public struct Rewrites {
        /// Whether every node at `path` is one record, whatever its children (the path alone tells): such a node
        /// is read whole, as text, compared as a tree only when the texts differ, and written whole.
        public var isRecordPath: (_ path: [String]) -> Bool
        /// For a path whose nodes are one record or not by their children (`/posts/{id}`: an AppCoda feed post, or
        /// a Makestagram owner's posts), the rule: a node is one record when some child (its key, and whether its
        /// value is an object) makes it so. Nil for any other path. Such a node is read whole as text on both
        /// sides; where both are no record, their children are compared as usual.
        public var recordRule: (_ path: [String]) -> ((_ key: String, _ isObject: Bool) -> Bool)?
        /// Hears each node to write, in RTDB order of path, none at or below an earlier one: the source's node
        /// there as compact JSON (import reads it as it reads the file: what it refuses, reported as rejects,
        /// may be in a record's text), or nil when the store's node goes. Every difference inside it was
        /// reported before.
        public var onRewrite: (_ path: [String], _ json: NodeText?) throws -> Void
        /// Where a record's text goes once it is larger than a megabyte.
        public var temporaryDirectory: String

        /// Rewrites asking `isRecordPath` and `recordRule` and telling `onRewrite`.
        public init(
            isRecordPath: @escaping ([String]) -> Bool,
            recordRule: @escaping ([String]) -> ((String, Bool) -> Bool)? = { _ in nil },
            temporaryDirectory: String = TreeSorter.defaultTemporaryDirectory,
            onRewrite: @escaping ([String], NodeText?) throws -> Void
        ) {
            self.isRecordPath = isRecordPath
            self.recordRule = recordRule
            self.temporaryDirectory = temporaryDirectory
            self.onRewrite = onRewrite
        }
    }

    /// The top-level nodes compared (`--only`, `--exclude`), when not all: the others are skipped on both
    /// sides. Only for a comparison of the whole tree (at the root).
    public var topLevel: TopLevelSelection?
    /// Whether priorities are left out of the comparison.
    public var ignoresPriorities: Bool
    /// How many bytes of JSON a difference's value keeps; beyond them it is cut (and marked `isCut`).
    public var valueLimit: Int
    /// Whether an object that is the same text on both sides is passed over without reading its tokens
    /// (`JSONReader.skipEqualObjects`). Off only to show that it changes nothing.
    var skipsEqualText = true
    /// Nodes (leaves and objects) looked at on either side so far.
    public private(set) var nodesCompared = 0
    private let handOver: (TreeDifference) throws -> Void
    private var path: [String] = []
    /// While a difference is split into writes: the one difference verify reports for it.
    private var group: TreeDifference.Group?
    /// With rewrites, a node only the source holds is split down to records and leaves (so that what is held in
    /// memory at once is one of them), and each differing record, leaf or node the store alone holds is handed
    /// to `onRewrite`.
    private let rewrites: Rewrites?
    /// Priorities of new objects being split (`reportOnlyInSource`), written before their first child is.
    private var pendingPriorities: [(path: [String], value: TreeValue)] = []
    /// While a record is compared (`compareRecord`): whether something in it differs. Nodes inside a record are
    /// not written one by one: the record is, whole.
    private var recordDiffers: Bool?
    /// The records' texts (`compareRecord`), kept from record to record so that their buffers are reused.
    private var sourceText = NodeText(), storeText = NodeText(), openObjects: [Bool] = []
    /// The texts of a node whose children tell whether it is one record (`Rewrites.recordRule`), which its
    /// records' comparisons read from.
    private var shapedSource = NodeText(), shapedStore = NodeText()

    /// A comparison that hands each difference to `onDifference` in RTDB order of path, as it is found.
    public init(
        ignoringPriorities: Bool = false, valueLimit: Int = 1 << 20,
        onDifference: @escaping (TreeDifference) throws -> Void
    ) {
        self.init(ignoringPriorities: ignoringPriorities, valueLimit: valueLimit, rewrites: nil, onDifference)
    }

    /// A comparison that hands each difference to `onDifference`, then the node to write for it to `rewrites`;
    /// priorities count. A missing node's `source` is whole (it is what is written); the store's values are cut
    /// at `valueLimit` bytes as usual.
    public init(
        rewrites: Rewrites, valueLimit: Int = 1 << 20, onDifference: @escaping (TreeDifference) throws -> Void
    ) {
        self.init(ignoringPriorities: false, valueLimit: valueLimit, rewrites: rewrites, onDifference)
    }

    private init(
        ignoringPriorities: Bool, valueLimit: Int, rewrites: Rewrites?,
        _ onDifference: @escaping (TreeDifference) throws -> Void
    ) {
        ignoresPriorities = ignoringPriorities
        self.valueLimit = valueLimit
        self.rewrites = rewrites
        handOver = onDifference
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
        /// Whether the object is written as an array (its children have no keys in the text).
        var isArray = false
    }

    /// Reads the start of the node at the reader's token: a leaf whole, an object up to its first child, a leaf
    /// with a priority (`{".value", ".priority"}`, either order) whole.
    private func head(_ reader: inout JSONReader) throws -> Head {
        switch reader.token {
        case .null:
            return Head(body: .absent)
        case .objectStart, .arrayStart:
            let isArray = reader.token == .arrayStart
            var priority: TreeValue?
            var key = try nextKey(&reader)
            if key == FirebaseKey.priority {
                priority = try scalar(&reader)
                key = try nextKey(&reader)
            }
            guard let key else { return Head(body: .absent, priority: priority) }
            guard key == FirebaseKey.value else {
                return Head(body: .object(firstKey: key), priority: priority, isArray: isArray)
            }
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
    static let leafAtRoot = "a leaf value at the root; an export's root must be an object"

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
            if path.isEmpty, let topLevel, key != FirebaseKey.priority, key != FirebaseKey.value,
                !topLevel.contains(key)
            {
                // Left out on both sides, as if neither held it (--only, --exclude).
                try skipCurrent(&reader)
                continue
            }
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
        var sourceHead = try head(&source)
        if path.isEmpty, case .leaf(let value) = sourceHead.body {
            // Import keeps named nodes only: a leaf for the whole tree never reaches the store.
            sourceHead = Head(
                body: .rejected(json: json(leaf: value, priority: sourceHead.priority), reason: Self.leafAtRoot))
        }
        let storeHead = try head(&store)
        if path.isEmpty, topLevel != nil, let sourceFirst = Self.firstKey(of: sourceHead),
            let storeFirst = Self.firstKey(of: storeHead)
        {
            // A selection of the root's children: those left out do not make either side a leaf or nothing.
            return try compareChildren(&source, firstKey: sourceFirst, &store, firstKey: storeFirst)
        }
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
            if rewrites != nil, a != b || (!ignoresPriorities && sourceHead.priority != storeHead.priority) {
                try comparePriorities(sourceHead.priority, storeHead.priority)
                return try rewrite(path, json(leaf: a, priority: sourceHead.priority))
            }
        case (.object(let a), .object(let b)):
            if let rewrites, recordDiffers == nil, let rule = rewrites.recordRule(path) {
                return try compareShaped(sourceHead, &source, storeHead, &store, by: rule)
            }
            if let rewrites, recordDiffers == nil,
                rewrites.isRecordPath(path) || sourceHead.priority != storeHead.priority
            {
                // Rewritten whole: a record is one row, and an object's priority is only stored beside a child.
                return try compareWritten(sourceHead, &source, storeHead, &store)
            }
            try comparePriorities(sourceHead.priority, storeHead.priority)
            try compareChildren(&source, firstKey: a, &store, firstKey: b)
            return
        default:
            if let rewrites, recordDiffers == nil, case .object = sourceHead.body, !Self.isWrittenWhole(path, rewrites)
            {
                // The store's leaf goes and the source's object comes child by child, as if nothing were there:
                // one difference, as verify counts it (changed, unless the object holds nothing).
                let outerGroup = group
                defer { group = outerGroup }
                group = group ?? TreeDifference.Group(path: path, kind: .extra)
                try reportOnlyInStore(storeHead, &store)
                if outerGroup == nil { group = TreeDifference.Group(path: path, kind: .changed) }
                return try reportOnlyInSource(sourceHead, &source)
            }
            if rewrites != nil, recordDiffers == nil {
                // A record where the store has a leaf, or a leaf where it has an object: written whole.
                return try compareWritten(sourceHead, &source, storeHead, &store)
            }
            var rejects: [TreeDifference]? = []
            let sourceValue = try capture(sourceHead, &source, rejects: &rejects, limit: sourceLimit)
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
            // Inside a node compared as text: marks it as differing.
            if rewrites != nil { try rewrite(path, sourceValue.isEmpty ? nil : sourceValue.json) }
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

    /// An object's first child's key, nil inside for no node; nil for a leaf or a reject.
    private static func firstKey(of head: Head) -> String?? {
        switch head.body {
        case .object(let key): .some(key)
        case .absent: .some(nil)
        case .leaf, .rejected: nil
        }
    }

    /// Merges two objects' children by key, from the first keys their heads read (nil: a side holds none).
    private mutating func compareChildren(
        _ source: inout JSONReader, firstKey: String?, _ store: inout JSONReader, firstKey storeFirst: String?
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
                    if skipsEqualText, let nodes = try JSONReader.skipEqualObjects(&source, &store) {
                        // The same text on both sides (the common case by far): the same tree.
                        nodesCompared += nodes
                    } else if let rewrites, recordDiffers == nil, rewrites.isRecordPath(path) {
                        try compareRecord(&source, &store)
                    } else {
                        try compareNodes(&source, &store)
                    }
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

    /// Hands `difference` over, with the difference being split around it (`group`).
    private func report(_ difference: TreeDifference) throws {
        guard let group, difference.kind != .rejected else { return try handOver(difference) }
        var part = difference
        part.group = group
        try handOver(part)
    }

    /// Reports the source's node at `path`, which the store lacks: rejected when import refuses it, else missing
    /// (what import would keep of it), followed by the rejects inside it. A node that holds nothing but empty
    /// objects and nulls is no node, as import reads it.
    private mutating func reportOnlyInSource(_ head: Head, _ source: inout JSONReader) throws {
        if case .absent = head.body { return }
        if case .rejected(let json, let reason) = head.body {
            try report(TreeDifference(path: path, kind: .rejected, source: json, store: nil, reason: reason))
            return
        }
        var reason = path.last.flatMap { FirebaseKey.problem(with: $0) } ?? FirebaseKey.problem(withPath: path)
        if reason == nil, case .leaf(.string(let text)) = head.body {
            reason = FirebaseKey.problem(withString: text)
        }
        if let rewrites, recordDiffers == nil, reason == nil, case .object(let first) = head.body,
            !Self.isWrittenWhole(path, rewrites)
        {
            // Child by child, so that what is held at once is one record or leaf, not a whole new subtree. The
            // priority is written before the first child that is, if one is (a node of nothing has none).
            let depth = pendingPriorities.count
            if let priority = head.priority { pendingPriorities.append((path, priority)) }
            // Verify counts such a node once, at its path: so does this, whatever the split.
            let (outerGroup, nodesBefore) = (group, nodesCompared)
            group = group ?? TreeDifference.Group(path: path, kind: .missing)
            defer {
                pendingPriorities.removeLast(pendingPriorities.count - min(depth, pendingPriorities.count))
                (group, nodesCompared) = (outerGroup, nodesBefore)
            }
            var key: String? = first
            var previous: String? = first
            while let current = key {
                path.append(current)
                try reportOnlyInSource(try self.head(&source), &source)
                path.removeLast()
                key = try nextKey(&source, after: &previous, isSource: true)
            }
            return
        }
        if rewrites != nil, recordDiffers == nil, reason == nil, case .object = head.body {
            // A record the store lacks, read as text (of any size) and compared with nothing: one node compared, as
            // verify counts it.
            let nodesBefore = nodesCompared
            defer { nodesCompared = nodesBefore }
            var nothing = JSONReader(source: MemorySource("null"))
            try nothing.next()
            return try compareWritten(head, &source, Head(body: .absent), &nothing)
        }
        var rejects: [TreeDifference]?
        if reason == nil { rejects = [] }
        let value = try capture(head, &source, rejects: &rejects, limit: reason == nil ? sourceLimit : valueLimit)
        if !value.isEmpty {
            try report(
                TreeDifference(
                    path: path, kind: reason == nil ? .missing : .rejected, source: value.json, store: nil,
                    reason: reason, isCut: value.isCut))
        }
        for reject in rejects ?? [] { try report(reject) }
        if rewrites != nil, reason == nil, !value.isEmpty { try rewrite(path, value.json) }
    }

    /// Whether the reader is on an object's (or array's) start.
    private static func isObject(_ reader: borrowing JSONReader) -> Bool {
        reader.token == .objectStart || reader.token == .arrayStart
    }

    /// Hands a node to write to `rewrites`, after the priorities of the new objects it lands in.
    private mutating func rewrite(_ path: [String], _ json: String?) throws {
        try rewrite(path, text: json.map(NodeText.init))
    }

    private mutating func rewrite(_ path: [String], text: NodeText?) throws {
        guard let rewrites else { return }
        if recordDiffers != nil {
            recordDiffers = true
            return
        }
        let pending = pendingPriorities
        pendingPriorities.removeAll()
        for (objectPath, priority) in pending {
            let priorityPath = objectPath + [FirebaseKey.priority]
            try report(TreeDifference(path: priorityPath, kind: .missing, source: self.json(priority), store: nil))
            try rewrites.onRewrite(priorityPath, NodeText(self.json(priority)))
        }
        try rewrites.onRewrite(path, text)
    }

    /// Bytes of the source's values kept: all of them when they are to be written, except inside a record,
    /// which is written from its text.
    private var sourceLimit: Int { rewrites == nil || recordDiffers != nil ? valueLimit : .max }

    /// Whether a node at `path` that only one side holds is written whole: a record, or a node whose children tell
    /// (which import then tells by them).
    private static func isWrittenWhole(_ path: [String], _ rewrites: Rewrites) -> Bool {
        rewrites.isRecordPath(path) || rewrites.recordRule(path) != nil
    }

    /// Compares two objects whose children tell whether each is one record (`Rewrites.recordRule`), their heads
    /// read: both are read to their ends as text (in temporary files past a megabyte); equal texts are equal
    /// nodes; where neither is a record by the rule, their children are compared from the texts as usual
    /// (records there written one by one); otherwise the node is compared whole and written whole.
    private mutating func compareShaped(
        _ sourceHead: Head, _ source: inout JSONReader, _ storeHead: Head, _ store: inout JSONReader,
        by rule: (String, Bool) -> Bool
    ) throws {
        let directory = rewrites?.temporaryDirectory ?? TreeSorter.defaultTemporaryDirectory
        var sourceNodes = 0, storeNodes = 0
        try Self.canonicalText(
            after: sourceHead, &source, into: &shapedSource, nodes: &sourceNodes, stack: &openObjects,
            spillingIn: directory)
        try Self.canonicalText(
            after: storeHead, &store, into: &shapedStore, nodes: &storeNodes, stack: &openObjects,
            spillingIn: directory)
        guard try !shapedSource.equals(shapedStore) else {
            nodesCompared += sourceNodes - 1
            return
        }
        let isRecord =
            try Self.anyChild(of: shapedSource, satisfies: rule) || Self.anyChild(of: shapedStore, satisfies: rule)
            || sourceHead.priority != storeHead.priority
        var sourceReader = JSONReader(
            source: shapedSource.source, bufferSize: min(shapedSource.count + 1, NodeText.memoryLimit))
        var storeReader = JSONReader(
            source: shapedStore.source, bufferSize: min(shapedStore.count + 1, NodeText.memoryLimit))
        try sourceReader.next()
        try storeReader.next()
        guard isRecord else {
            // Their children, compared as any children are (a record's text read into `sourceText` as usual).
            let sourceHead = try head(&sourceReader), storeHead = try head(&storeReader)
            guard case .object(let a) = sourceHead.body, case .object(let b) = storeHead.body else {
                preconditionFailure("two objects read again from their texts")
            }
            try comparePriorities(sourceHead.priority, storeHead.priority)
            try compareChildren(&sourceReader, firstKey: a, &storeReader, firstKey: b)
            return
        }
        nodesCompared += sourceNodes - 1
        let (differs, _) = try compareInside(
            shapedSource.source, count: shapedSource.count, shapedStore.source, count: shapedStore.count)
        if differs { try rewrite(path, text: shapedSource) }
    }

    /// Whether some child of the object `text` holds satisfies `rule` (its key, and whether its value is an
    /// object); `.priority` is no child.
    private static func anyChild(of text: NodeText, satisfies rule: (String, Bool) -> Bool) throws -> Bool {
        var reader = JSONReader(source: text.source, bufferSize: min(text.count + 1, NodeText.memoryLimit))
        guard try reader.next() == .objectStart || reader.token == .arrayStart else { return false }
        while let key = try reader.nextChild() {
            if reader.token == .null || key == FirebaseKey.priority {
                if isObject(reader) { try reader.skipContainerUnchecked() }
                continue
            }
            let isObject = isObject(reader)
            if rule(key, isObject) { return true }
            if isObject { try reader.skipContainerUnchecked() }
        }
        return false
    }

    /// Compares the record at the readers' tokens (the path alone says it is one): both are read whole as
    /// canonical text, and when the texts differ, compared as trees (the differences reported) and the record
    /// written from the source's text.
    private mutating func compareRecord(_ source: inout JSONReader, _ store: inout JSONReader) throws {
        let directory = rewrites?.temporaryDirectory ?? TreeSorter.defaultTemporaryDirectory
        try Self.canonicalText(
            &source, into: &sourceText, nodes: &nodesCompared, stack: &openObjects, spillingIn: directory)
        var storeNodes = 0
        try Self.canonicalText(&store, into: &storeText, nodes: &storeNodes, stack: &openObjects, spillingIn: directory)
        try rewriteIfTextsDiffer()
    }

    /// Compares two nodes whose heads were read and that are written whole when they differ (a record, an object
    /// with a new priority, a record where the other side has a leaf): as `compareRecord` compares records, each
    /// read to its end as canonical text, in a temporary file past a megabyte, so that a node of any size costs
    /// bounded memory.
    private mutating func compareWritten(
        _ sourceHead: Head, _ source: inout JSONReader, _ storeHead: Head, _ store: inout JSONReader
    ) throws {
        let directory = rewrites?.temporaryDirectory ?? TreeSorter.defaultTemporaryDirectory
        var sourceNodes = 0, storeNodes = 0
        try Self.canonicalText(
            after: sourceHead, &source, into: &sourceText, nodes: &sourceNodes, stack: &openObjects,
            spillingIn: directory)
        try Self.canonicalText(
            after: storeHead, &store, into: &storeText, nodes: &storeNodes, stack: &openObjects, spillingIn: directory)
        nodesCompared += sourceNodes - 1
        try rewriteIfTextsDiffer()
    }

    /// Compares `sourceText` with `storeText`, the node at `path` on each side: equal texts are equal trees (one
    /// writer wrote both, from values read in RTDB order); otherwise they are compared as trees, the differences
    /// reported, and the source's text written when they differ as trees.
    private mutating func rewriteIfTextsDiffer() throws {
        guard try !sourceText.equals(storeText) else { return }
        let (differs, _) = try compareInside(
            sourceText.source, count: sourceText.count, storeText.source, count: storeText.count)
        if differs { try rewrite(path, text: sourceText.isNull ? nil : sourceText) }
    }

    /// Compares the texts of one node (a record, or a node rewritten whole) as trees, reporting each
    /// difference but writing nothing inside it; returns whether they differ, and the nodes compared.
    private mutating func compareInside(
        _ source: any ByteSource, count sourceCount: Int, _ store: any ByteSource, count storeCount: Int
    ) throws -> (differs: Bool, nodes: Int) {
        // Readers sized to the texts, up to a megabyte: most are small, and the default is a megabyte each.
        var sourceReader = JSONReader(source: source, bufferSize: min(sourceCount + 1, NodeText.memoryLimit))
        var storeReader = JSONReader(source: store, bufferSize: min(storeCount + 1, NodeText.memoryLimit))
        try sourceReader.next()
        try storeReader.next()
        recordDiffers = false
        var comparedInside = 0
        swap(&comparedInside, &nodesCompared)
        defer {
            swap(&comparedInside, &nodesCompared)
            recordDiffers = nil
        }
        try compareNodes(&sourceReader, &storeReader)
        return (recordDiffers == true, nodesCompared)
    }

    /// The node whose head was read as `canonicalText` writes a whole node: the head's own part first (a leaf
    /// whole, an object's `{`, priority and first key), then the rest of the object from the reader.
    private static func canonicalText(
        after head: Head, _ reader: inout JSONReader, into text: inout NodeText, nodes: inout Int,
        stack needsComma: inout [Bool], spillingIn directory: String
    ) throws {
        text.reset()
        switch head.body {
        case .absent:
            text.bytes.append(contentsOf: "null".utf8)
        case .leaf(let value):
            text.bytes.append(contentsOf: json(leaf: value, priority: head.priority).utf8)
        case .rejected(let json, _):
            text.bytes.append(contentsOf: json.utf8)
        case .object(let firstKey) where head.isArray:
            // The elements before the first were nulls (an array has no keys to say where its first element is).
            text.bytes.append(UInt8(ascii: "["))
            for _ in 0..<(Int(firstKey) ?? 0) { text.bytes.append(contentsOf: "null,".utf8) }
            try resume()
            return
        case .object(let firstKey):
            text.bytes.append(UInt8(ascii: "{"))
            if let priority = head.priority {
                Self.appendQuoted(FirebaseKey.priority, to: &text.bytes)
                text.bytes.append(UInt8(ascii: ":"))
                text.bytes.append(contentsOf: json(priority).utf8)
                text.bytes.append(UInt8(ascii: ","))
            }
            Self.appendQuoted(firstKey, to: &text.bytes)
            text.bytes.append(UInt8(ascii: ":"))
            try resume()
            return
        }
        nodes += 1

        /// The rest of the object, the reader on its first child's value.
        func resume() throws {
            let objectDepth = reader.depth - (isObject(reader) ? 1 : 0)
            try canonicalText(
                &reader, into: &text, nodes: &nodes, stack: &needsComma, spillingIn: directory,
                resumingIn: objectDepth)
        }
    }

    private static func appendQuoted(_ key: String, to bytes: inout [UInt8]) {
        var key = key
        key.withUTF8 { JSONTextWriter.appendQuoted($0, to: &bytes) }
    }

    /// The value at the reader's token as compact JSON, read to its end: keys and strings quoted and numbers
    /// written as `JSONTextWriter` writes them, so that two equal texts are two equal trees; a number beyond a
    /// double as it was written. Adds the values read to `nodes`; `needsComma` is scratch space. With
    /// `objectDepth`, the reader is on the first child's value of the object open at that depth, whose start and
    /// first key `text` already holds, and the text goes on to the object's end.
    private static func canonicalText(
        _ reader: inout JSONReader, into text: inout NodeText, nodes: inout Int, stack needsComma: inout [Bool],
        spillingIn directory: String, resumingIn objectDepth: Int? = nil
    ) throws {
        if objectDepth == nil { text.reset() }
        needsComma.removeAll(keepingCapacity: true)
        let startDepth = objectDepth.map { $0 - 1 } ?? reader.depth - (isObject(reader) ? 1 : 0)
        var afterKey = objectDepth != nil
        if objectDepth != nil {
            nodes += 1
            needsComma.append(true)
        }
        while true {
            let token = reader.token
            if token != .key, token != .objectEnd, token != .arrayEnd {
                nodes += 1
                if !afterKey, let last = needsComma.last {
                    if last { text.bytes.append(UInt8(ascii: ",")) }
                    needsComma[needsComma.count - 1] = true
                }
            }
            switch token {
            case .objectStart, .arrayStart:
                text.bytes.append(UInt8(ascii: token == .objectStart ? "{" : "["))
                needsComma.append(false)
            case .objectEnd, .arrayEnd:
                needsComma.removeLast()
                text.bytes.append(UInt8(ascii: token == .objectEnd ? "}" : "]"))
            case .key:
                if let last = needsComma.last {
                    if last { text.bytes.append(UInt8(ascii: ",")) }
                    needsComma[needsComma.count - 1] = true
                }
                JSONTextWriter.appendQuoted(reader.text, to: &text.bytes)
                text.bytes.append(UInt8(ascii: ":"))
            case .string:
                JSONTextWriter.appendQuoted(reader.text, to: &text.bytes)
            case .number:
                if reader.number.isFinite {
                    text.bytes.append(contentsOf: JavaScriptNumber.format(reader.number).utf8)
                } else {
                    text.bytes.append(contentsOf: reader.text)
                }
            case .true: text.bytes.append(contentsOf: "true".utf8)
            case .false: text.bytes.append(contentsOf: "false".utf8)
            case .null: text.bytes.append(contentsOf: "null".utf8)
            case .end: break
            }
            afterKey = token == .key
            try text.spillIfLarge(in: directory)
            if reader.depth <= startDepth, token != .key { break }
            try reader.next()
        }
    }

    /// Reports the store's node at `path`, which the source lacks.
    private mutating func reportOnlyInStore(_ head: Head, _ store: inout JSONReader) throws {
        if case .absent = head.body { return }
        let value = try capture(head, &store)
        try report(TreeDifference(path: path, kind: .extra, source: nil, store: value.json, isCut: value.isCut))
        if rewrites != nil { try rewrite(path, nil) }
    }

    // MARK: Values as JSON

    private func json(_ value: TreeValue) -> String { Self.json(value) }

    private static func json(_ value: TreeValue) -> String {
        var writer = JSONTextWriter()
        writer.value(value)
        writer.finish()
        return String(decoding: writer.bytes, as: UTF8.self)
    }

    /// A leaf as JSON, with its priority when it has one.
    private func json(leaf value: TreeValue, priority: TreeValue?) -> String {
        Self.json(leaf: value, priority: priority)
    }

    private static func json(leaf value: TreeValue, priority: TreeValue?) -> String {
        guard let priority else { return json(value) }
        return json(.object([TreeKey(FirebaseKey.priority): priority, TreeKey(FirebaseKey.value): value]))
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
        _ head: Head, _ reader: inout JSONReader, rejects: inout [TreeDifference]?, isSource: Bool = true,
        limit: Int? = nil
    ) throws -> CapturedValue {
        var writer = LazyObjectWriter(limit: limit ?? valueLimit)
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
