/// A Firebase key compared and hashed as the Realtime Database compares keys: by its code units. Swift's `String`
/// equality is canonical equivalence (`"é" == "e\u{301}"`), under which two keys Firebase holds apart would merge
/// into one child.
public struct TreeKey: Hashable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
    /// The key.
    public let string: String

    /// The key `string`.
    public init(_ string: String) {
        self.string = string
    }

    /// A key written as a literal.
    public init(stringLiteral value: String) {
        string = value
    }

    /// The key itself.
    public var description: String { string }

    /// Equal when the UTF-8 bytes are, which is when the UTF-16 code units are.
    public static func == (a: TreeKey, b: TreeKey) -> Bool {
        FirebaseKey.same(a.string, b.string)
    }

    /// Hashes the UTF-8 bytes.
    public func hash(into hasher: inout Hasher) {
        var string = string
        string.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
    }
}

/// A small Firebase subtree held in memory: a record being imported or exported, an `extra` column, a test's
/// expected tree. Large trees are never built this way; they stream.
///
/// Objects hold their children unordered; writers sort them in RTDB's key order. Priorities are kept as the
/// pseudo-children `.priority` (and `.value` for a leaf with a priority), as the export format writes them.
public indirect enum TreeValue: Equatable, Sendable {
    /// A string leaf.
    case string(String)
    /// A number leaf (Firebase numbers are doubles).
    case number(Double)
    /// A boolean leaf.
    case bool(Bool)
    /// An object; never empty in a normalized tree.
    case object([TreeKey: TreeValue])

    /// The children when this is an object, else nil.
    public var children: [TreeKey: TreeValue]? {
        if case .object(let children) = self { return children }
        return nil
    }

    /// The child at `key`, when this is an object that has one.
    public subscript(key: String) -> TreeValue? {
        children?[TreeKey(key)]
    }

    /// The node at `path` below this one, if there is one.
    public func descendant(at path: some Collection<String>) -> TreeValue? {
        var node: TreeValue? = self
        for key in path { node = node?[key] }
        return node
    }

    /// Deep-merges `other` over this value: objects merge child by child, anything else is replaced.
    public func merging(_ other: TreeValue) -> TreeValue {
        guard case .object(var mine) = self, case .object(let theirs) = other else { return other }
        for (key, value) in theirs {
            mine[key] = mine[key].map { $0.merging(value) } ?? value
        }
        return .object(mine)
    }

    /// Sets the value at `path`, creating objects along the way and replacing leaves in the way.
    public mutating func set(_ value: TreeValue, at path: ArraySlice<String>) {
        guard let key = path.first else {
            self = value
            return
        }
        var children = self.children ?? [:]
        var child = children[TreeKey(key)] ?? .object([:])
        child.set(value, at: path.dropFirst())
        children[TreeKey(key)] = child
        self = .object(children)
    }

    /// This value's keys in the order exports write them: RTDB order with `.priority` first, except that a leaf
    /// with a priority is written `{".value": v, ".priority": p}` as the SDKs' `exportVal()` does.
    public var orderedKeys: [String] {
        guard let children else { return [] }
        if children[TreeKey(FirebaseKey.value)] != nil {
            return [FirebaseKey.value, FirebaseKey.priority].filter { children[TreeKey($0)] != nil }
        }
        return children.keys.map(\.string).sorted(by: FirebaseKey.exportPrecedes)
    }

    /// The first pseudo-child below this value (the node at `path`) that import refuses, with its path and why: a
    /// `.value` beside children other than `.priority` or holding an object, a `.priority` that is no string or
    /// number. Nil when there is none. As deep as the value, which a reader bounds at Firebase's 32 levels.
    public func pseudoChildProblem(at path: [String] = []) -> (path: [String], problem: String)? {
        guard let children else { return nil }
        if let value = children[TreeKey(FirebaseKey.value)] {
            if value.children != nil {
                return (path + [FirebaseKey.value], "\".value\" must be a leaf, beside nothing but \".priority\"")
            }
            if let other = children.keys.map(\.string).sorted(by: FirebaseKey.exportPrecedes).first(where: {
                $0 != FirebaseKey.value && $0 != FirebaseKey.priority
            }) {
                return (path + [other], "a node with a \".value\" cannot have children")
            }
        }
        switch children[TreeKey(FirebaseKey.priority)] {
        case nil, .string?, .number?: break
        default: return (path + [FirebaseKey.priority], "a priority must be a string or a number")
        }
        for key in orderedKeys where key != FirebaseKey.value && key != FirebaseKey.priority {
            if let problem = children[TreeKey(key)]?.pseudoChildProblem(at: path + [key]) { return problem }
        }
        return nil
    }

    /// Every leaf below this value with its path, in RTDB order.
    public func leaves(prefix: [String] = []) -> [(path: [String], value: TreeValue)] {
        guard let children else { return [(prefix, self)] }
        return orderedKeys.flatMap { children[TreeKey($0)]?.leaves(prefix: prefix + [$0]) ?? [] }
    }
}

extension TreeValue {
    /// Parses JSON text into a tree with Firebase's semantics: arrays become integer-keyed objects, nulls and
    /// empty objects vanish (and, when `normalizing`, objects holding only a `.priority`), a repeated key's last
    /// occurrence wins. Returns nil for a document that holds nothing. Numbers beyond a double and nesting deeper
    /// than Firebase's 32 levels throw; keys and Firebase's other limits are not checked (the importer does that).
    public static func parse(json text: String, normalizing: Bool = true) throws -> TreeValue? {
        var reader = JSONReader(source: MemorySource(text))
        try reader.next()
        let value = try read(&reader, normalizing: normalizing)
        try reader.next()
        return value
    }

    /// The value starting at the reader's current token.
    package static func read(_ reader: inout JSONReader, normalizing: Bool) throws -> TreeValue? {
        switch reader.token {
        case .string: return .string(reader.string)
        case .number:
            guard reader.number.isFinite else {
                throw TreeError(
                    .malformedInput, "a number outside the range of a double at \(reader.position)",
                    position: reader.position,
                    path: reader.pathDescription)
            }
            return .number(reader.number == 0 ? 0 : reader.number)
        case .true: return .bool(true)
        case .false: return .bool(false)
        case .null: return nil
        case .objectStart, .arrayStart:
            // The recursion is as deep as the reader lets the input nest (Firebase's 32 levels).
            var children: [TreeKey: TreeValue] = [:]
            while let key = try reader.nextChild() {
                children[TreeKey(key)] = try read(&reader, normalizing: normalizing)
            }
            if children.isEmpty { return nil }
            if normalizing, children.count == 1, children[TreeKey(FirebaseKey.priority)] != nil { return nil }
            return .object(children)
        default:
            preconditionFailure("a value token")
        }
    }
}

extension Dictionary where Key == TreeKey {
    /// The value at the key `string`, compared by code units.
    public subscript(key: String) -> Value? {
        get { self[TreeKey(key)] }
        set { self[TreeKey(key)] = newValue }
    }
}

extension TreeKey {
    /// Whether the key is `string`, compared by code units.
    public static func == (key: TreeKey, string: String) -> Bool {
        key == TreeKey(string)
    }

    /// Whether the key is not `string`, compared by code units.
    public static func != (key: TreeKey, string: String) -> Bool {
        !(key == string)
    }

    /// Whether the key starts with `prefix`.
    public func hasPrefix(_ prefix: String) -> Bool {
        string.utf8.starts(with: prefix.utf8)
    }
}

extension TreeKey: Comparable {
    /// Byte order (UTF-8, which is code point order).
    public static func < (a: TreeKey, b: TreeKey) -> Bool {
        a.string.utf8.lexicographicallyPrecedes(b.string.utf8)
    }
}
