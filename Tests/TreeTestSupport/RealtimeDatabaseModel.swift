/// A small, independent reference model of the Firebase Realtime Database, for property tests: a tree of values
/// and the verbs `set`, `update` (keys may be paths), `push` and `remove`, with Firebase's refusals and its export
/// rendering. Written from the SDK's behaviour (firebase-js-sdk `validation.ts`, `Path.ts`, `ChildrenNode.ts`,
/// `LeafNode.ts`, `util.ts`) and `../shared/firebase-format.md`, not from the code it judges: it shares no type
/// with FirebaseTree or Storage.
public struct RealtimeDatabaseModel: Sendable {
    /// The whole tree; nil when the database is empty.
    public private(set) var root: Node?

    /// An empty database, or one holding `root`.
    public init(root: Node? = nil) {
        self.root = root
    }

    /// Why Firebase refuses a write (the database is unchanged).
    public struct Refusal: Error, Sendable, CustomStringConvertible {
        /// What the SDK would say.
        public var description: String
        /// A refusal saying `description`.
        public init(_ description: String) { self.description = description }
    }

    // MARK: The verbs

    /// `ref(path).set(value)`: the node becomes `value`; null removes it. A leaf above the path is replaced by
    /// an object (keeping its priority, as `LeafNode.updateImmediateChild` does); removing below a leaf changes
    /// nothing.
    public mutating func set(_ value: JSONValue, at path: [String]) throws(Refusal) {
        try Self.validate(path: path)
        let node = try Self.node(from: value, at: path)
        root = Self.setting(node, at: path[...], in: root)
    }

    /// `ref(path).update(object)`: each key of the object is a path below `path` (`"a/b"`) whose node becomes
    /// the key's value; the others stay. Not an object, or two keys one of which lies below the other, is refused.
    public mutating func update(_ value: JSONValue, at path: [String]) throws(Refusal) {
        try Self.validate(path: path)
        guard case .object(let members) = value else {
            throw Refusal("update() takes an object containing the children to replace")
        }
        var writes: [([String], Node?)] = []
        var seen: [String: JSONValue] = [:]
        var order: [String] = []
        for (key, child) in members {  // the JSON object: a repeated key's last value wins
            if seen[key] == nil { order.append(key) }
            seen[key] = child
        }
        var paths: [[String]] = []
        for key in order {
            let relative = key.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
            if relative.isEmpty { throw Refusal("update() key \"\(key)\" names no child") }
            try Self.validate(path: path + relative)
            paths.append(relative)
            writes.append((relative, try Self.node(from: seen[key]!, at: path + relative)))
        }
        let sorted = paths.sorted { Self.pathPrecedes($0, $1) }
        for (previous, next) in zip(sorted, sorted.dropFirst()) where next.starts(with: previous) {
            throw Refusal(
                "update() path \(previous.joined(separator: "/")) is an ancestor of \(next.joined(separator: "/"))")
        }
        for (relative, node) in writes { root = Self.setting(node, at: (path + relative)[...], in: root) }
    }

    /// `ref(path).remove()`, which is `set(null)`.
    public mutating func remove(at path: [String]) throws(Refusal) {
        try set(.null, at: path)
    }

    /// The node at `path`; nil when nothing is there.
    public func node(at path: [String]) -> Node? {
        var node = root
        for key in path {
            guard case .object(let children, _)? = node else { return nil }
            node = children[Key(key)]
        }
        return node
    }

    // MARK: Export

    /// The console's export of the whole tree, compact: `null` when empty.
    public var exportText: String { Self.render(root) }

    /// The export of one node, as the REST API's `GET /path.json` gives it.
    public func exportText(at path: [String]) -> String { Self.render(node(at: path)) }

    /// `node` as the console's export writes it: `.priority` first, children in key order, integer-keyed
    /// objects as arrays (`ChildrenNode.val`'s rule), numbers as JavaScript prints them.
    public static func render(_ node: Node?) -> String {
        var text = ""
        if let node { write(node, into: &text) } else { text = "null" }
        return text
    }

    private static func write(_ node: Node, into text: inout String) {
        switch node {
        case .leaf(let leaf, nil):
            text += leaf.json
        case .leaf(let leaf, let priority?):
            text += "{\".value\":" + leaf.json + ",\".priority\":" + priority.json + "}"
        case .object(let children, let priority):
            let keys = children.keys.sorted { keyPrecedes($0.string, $1.string) }
            if priority == nil, let count = arrayLength(keys) {
                text += "["
                for index in 0..<count {
                    if index > 0 { text += "," }
                    if let child = children[Key(String(index))] { write(child, into: &text) } else { text += "null" }
                }
                text += "]"
                return
            }
            text += "{"
            var first = true
            if let priority {
                text += "\".priority\":" + priority.json
                first = false
            }
            for key in keys {
                if !first { text += "," }
                first = false
                text += Leaf.quoted(key.string) + ":"
                write(children[key]!, into: &text)
            }
            text += "}"
        }
    }

    /// The array length an object renders as, when every key is a non-negative decimal integer without leading
    /// zeros and the largest is below twice their number; else nil.
    private static func arrayLength(_ keys: [Key]) -> Int? {
        var largest = -1
        for key in keys {
            let bytes = Array(key.string.utf8)
            guard !bytes.isEmpty, bytes.count <= 15, bytes.allSatisfy({ (48...57).contains($0) }),
                bytes[0] != 48 || bytes.count == 1, let value = Int(key.string)
            else { return nil }
            largest = max(largest, value)
        }
        return largest < 2 * keys.count ? largest + 1 : nil
    }

    // MARK: Keys and paths

    /// Why Firebase refuses `key` as a child's name; nil when it is fine.
    public static func keyProblem(_ key: String) -> String? {
        if key.isEmpty { return "a key is empty" }
        for byte in key.utf8 {
            if byte < 0x20 || byte == 0x7F { return "a key holds a control character" }
            if ".$#[]/".utf8.contains(byte) { return "a key holds one of . $ # [ ] /" }
        }
        return nil
    }

    /// A path's keys are valid, it is at most 32 deep and at most 768 bytes written `/a/b`.
    static func validate(path: [String]) throws(Refusal) {
        for key in path {
            if let problem = keyProblem(key) { throw Refusal("\(problem): \"\(key)\"") }
        }
        try validateLimits(path)
    }

    private static func validateLimits(_ path: [String]) throws(Refusal) {
        if path.count > 32 { throw Refusal("a path is more than 32 levels deep") }
        let bytes = path.reduce(path.isEmpty ? 1 : 0) { $0 + 1 + $1.utf8.count }
        if bytes > 768 { throw Refusal("a path is longer than 768 bytes") }
    }

    /// Whether `a` sorts before `b` in the Realtime Database's key order: keys that are 32-bit integers first, by
    /// value (the shorter first when equal: "7" before "007"), then the others by UTF-16 code units.
    public static func keyPrecedes(_ a: String, _ b: String) -> Bool {
        switch (int32(a), int32(b)) {
        case (let x?, let y?): return x != y ? x < y : a.utf8.count < b.utf8.count
        case (.some, nil): return true
        case (nil, .some): return false
        case (nil, nil): return a.utf16.lexicographicallyPrecedes(b.utf16)
        }
    }

    private static func int32(_ key: String) -> Int64? {
        var digits = Substring(key)
        if digits.first == "-" { digits = digits.dropFirst() }
        guard (1...10).contains(digits.utf8.count), digits.utf8.allSatisfy({ (48...57).contains($0) }),
            let value = Int64(key), value >= Int64(Int32.min), value <= Int64(Int32.max)
        else { return nil }
        return value
    }

    private static func pathPrecedes(_ a: [String], _ b: [String]) -> Bool {
        for (x, y) in zip(a, b) where x.utf8.elementsEqual(y.utf8) == false { return keyPrecedes(x, y) }
        return a.count < b.count
    }

    // MARK: From JSON to nodes

    /// The node `value` stands for at `path`: arrays are integer-keyed objects, nulls and empty objects vanish,
    /// `.priority` and `.value` are a node's priority and a leaf's value. Refused as the SDK's
    /// `validateFirebaseData` refuses: bad keys, paths too long or deep, numbers beyond a double, strings over
    /// 10 MB, `.value` beside other children, a priority that is not a string or number.
    static func node(from value: JSONValue, at path: [String]) throws(Refusal) -> Node? {
        switch value {
        case .null: return nil
        case .bool(let flag): return .leaf(.bool(flag), priority: nil)
        case .string(let string):
            if string.utf8.count > 10 << 20 { throw Refusal("a string is longer than 10 MB") }
            return .leaf(.string(string), priority: nil)
        case .number(let text):
            guard let number = Double(text), number.isFinite else { throw Refusal("\(text) is not a finite number") }
            return .leaf(.number(number == 0 ? 0 : number), priority: nil)
        case .array(let elements):
            return try node(
                from: .object(elements.enumerated().map { (String($0.offset), $0.element) }), at: path)
        case .object(let members):
            var last: [String: JSONValue] = [:]
            var order: [String] = []
            for (key, child) in members {
                if last[key] == nil { order.append(key) }
                last[key] = child
            }
            var priority: Leaf?
            var leafValue: Leaf?
            var children: [Key: Node] = [:]
            for key in order {
                let child = last[key]!
                switch key {
                case ".priority":
                    switch child {
                    case .null: break
                    case .string, .number:
                        guard case .leaf(let leaf, nil)? = try node(from: child, at: path) else { break }
                        priority = leaf
                    default: throw Refusal("a priority must be a string or a number")
                    }
                case ".value":
                    switch child {
                    case .null: break
                    case .array, .object: throw Refusal(".value must be a leaf")
                    default:
                        guard case .leaf(let leaf, nil)? = try node(from: child, at: path) else { break }
                        leafValue = leaf
                    }
                default:
                    if let problem = keyProblem(key) { throw Refusal("\(problem): \"\(key)\"") }
                    try validateLimits(path + [key])
                    if let node = try node(from: child, at: path + [key]) { children[Key(key)] = node }
                }
            }
            if let leafValue {
                if order.contains(where: { $0 != ".value" && $0 != ".priority" }) {
                    throw Refusal(".value beside other children")
                }
                return .leaf(leafValue, priority: priority)
            }
            return children.isEmpty ? nil : .object(children, priority: priority)
        }
    }

    /// `tree` with `node` at `path` (nil removes it); objects left empty vanish with their priority.
    static func setting(_ node: Node?, at path: ArraySlice<String>, in tree: Node?) -> Node? {
        guard let key = path.first else { return node }
        var children: [Key: Node] = [:]
        var priority: Leaf?
        switch tree {
        case nil: break
        case .leaf(_, let leafPriority)?:
            if node == nil { return tree }  // nothing below a leaf to remove
            priority = leafPriority
        case .object(let existing, let objectPriority)?:
            children = existing
            priority = objectPriority
        }
        children[Key(key)] = setting(node, at: path.dropFirst(), in: children[Key(key)])
        return children.isEmpty ? nil : .object(children, priority: priority)
    }
}

extension RealtimeDatabaseModel {
    /// Where two trees part, as a comparison of a file with the database reports it.
    public struct Difference: Hashable, Sendable, CustomStringConvertible {
        /// The shallowest path present on one side only, a leaf's, or a priority's (`…/.priority`).
        public var path: [String]
        /// `missing` (in the source only), `extra` (in the database only), `changed`, or `rejected` (in the
        /// source, but Firebase refuses it).
        public var kind: String

        /// A difference.
        public init(path: [String], kind: String) {
            self.path = path
            self.kind = kind
        }

        /// `/a/b missing`.
        public var description: String { "/" + path.joined(separator: "/") + " " + kind }

        /// Equal when the kinds are and the paths are, byte for byte.
        public static func == (a: Difference, b: Difference) -> Bool {
            a.kind == b.kind && a.path.count == b.path.count
                && zip(a.path, b.path).allSatisfy { $0.utf8.elementsEqual($1.utf8) }
        }

        /// Hashes the kind and the paths' bytes.
        public func hash(into hasher: inout Hasher) {
            hasher.combine(kind)
            for key in path { hasher.combine(Key(key)) }
        }
    }

    /// The differences between a source tree and the database's, at their shallowest: a node on one side only
    /// is one difference, however much it holds.
    public static func differences(source: Node?, store: Node?, at path: [String] = []) -> [Difference] {
        switch (source, store) {
        case (nil, nil): return []
        case (_?, nil): return [Difference(path: path, kind: "missing")]
        case (nil, _?): return [Difference(path: path, kind: "extra")]
        case (.leaf(let a, let p)?, .leaf(let b, let q)?):
            return (a == b ? [] : [Difference(path: path, kind: "changed")]) + priorityDifference(p, q, at: path)
        case (.object(let a, let p)?, .object(let b, let q)?):
            var found = priorityDifference(p, q, at: path)
            for key in Set(a.keys).union(b.keys) {
                found += differences(source: a[key], store: b[key], at: path + [key.string])
            }
            return found
        default: return [Difference(path: path, kind: "changed")]
        }
    }

    /// The difference between two nodes' priorities, if any, at `path/.priority`.
    public static func priorityDifference(_ source: Leaf?, _ store: Leaf?, at path: [String]) -> [Difference] {
        switch (source, store) {
        case (nil, nil): return []
        case (_?, nil): return [Difference(path: path + [".priority"], kind: "missing")]
        case (nil, _?): return [Difference(path: path + [".priority"], kind: "extra")]
        case (let a?, let b?): return a == b ? [] : [Difference(path: path + [".priority"], kind: "changed")]
        }
    }

    /// What an import that lets rejects through keeps of `value` at `path`, and the paths of what it drops: a
    /// child with a bad key, a number beyond a double (each dropped alone, its siblings kept).
    public static func nodeDroppingRejects(from value: JSONValue, at path: [String]) -> (Node?, [[String]]) {
        switch value {
        case .number(let text):
            guard let number = Double(text), number.isFinite else { return (nil, [path]) }
            return (.leaf(.number(number == 0 ? 0 : number), priority: nil), [])
        case .array(let elements):
            return nodeDroppingRejects(
                from: .object(elements.enumerated().map { (String($0.offset), $0.element) }), at: path)
        case .object(let members) where !members.contains(where: { $0.0.hasPrefix(".") }):
            var last: [String: JSONValue] = [:]
            for (key, child) in members { last[key] = child }
            var children: [Key: Node] = [:]
            var rejects: [[String]] = []
            for (key, child) in last {
                if keyProblem(key) != nil {
                    if !isEmpty(child) { rejects.append(path + [key]) }
                    continue
                }
                let (node, dropped) = nodeDroppingRejects(from: child, at: path + [key])
                if let node { children[Key(key)] = node }
                rejects += dropped
            }
            return (children.isEmpty ? nil : .object(children, priority: nil), rejects)
        default:
            return ((try? node(from: value, at: path)) ?? nil, [])
        }
    }

    /// Whether a JSON value holds no leaf at all (nulls, empty objects and arrays only).
    static func isEmpty(_ value: JSONValue) -> Bool {
        switch value {
        case .null: true
        case .array(let elements): elements.allSatisfy(isEmpty)
        case .object(let members): members.allSatisfy { isEmpty($0.1) }
        default: false
        }
    }
}

extension RealtimeDatabaseModel {
    /// A child's name, compared by its bytes (Swift's `String ==` is canonical equivalence, under which two keys
    /// Firebase holds apart would be one).
    public struct Key: Hashable, Sendable {
        /// The key.
        public let string: String

        /// The key `string`.
        public init(_ string: String) { self.string = string }

        /// Equal when the UTF-8 bytes are.
        public static func == (a: Key, b: Key) -> Bool { a.string.utf8.elementsEqual(b.string.utf8) }

        /// Hashes the UTF-8 bytes.
        public func hash(into hasher: inout Hasher) {
            for byte in string.utf8 { hasher.combine(byte) }
        }
    }

    /// A leaf's value.
    public enum Leaf: Equatable, Sendable {
        /// A string.
        case string(String)
        /// A number: Firebase's numbers are doubles.
        case number(Double)
        /// A boolean.
        case bool(Bool)

        /// Equal by bytes for strings, by value for numbers.
        public static func == (a: Leaf, b: Leaf) -> Bool {
            switch (a, b) {
            case (.string(let x), .string(let y)): x.utf8.elementsEqual(y.utf8)
            case (.number(let x), .number(let y)): x == y
            case (.bool(let x), .bool(let y)): x == y
            default: false
            }
        }

        /// The leaf as JSON, as JavaScript's `JSON.stringify` writes it.
        public var json: String {
            switch self {
            case .string(let string): Leaf.quoted(string)
            case .number(let number): Leaf.javaScript(number)
            case .bool(let flag): flag ? "true" : "false"
            }
        }

        /// `JSON.stringify` of a string: `"` and `\` escaped, the C0 controls as `\b \t \n \f \r` or `\u00xx`.
        public static func quoted(_ string: String) -> String {
            var text = "\""
            for scalar in string.unicodeScalars {
                switch scalar {
                case "\"": text += "\\\""
                case "\\": text += "\\\\"
                case "\u{8}": text += "\\b"
                case "\t": text += "\\t"
                case "\n": text += "\\n"
                case "\u{C}": text += "\\f"
                case "\r": text += "\\r"
                case _ where scalar.value < 0x20:
                    let hex = String(scalar.value, radix: 16)
                    text += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                default: text.unicodeScalars.append(scalar)
                }
            }
            return text + "\""
        }

        /// `Number.prototype.toString()` (ECMA-262 Number::toString): the shortest digits that read back as the
        /// number, in positional notation for exponents from -7 to 20, else `d.ddde±x`.
        public static func javaScript(_ number: Double) -> String {
            if number == 0 { return "0" }
            if number < 0 { return "-" + javaScript(-number) }
            // Swift's description is also the shortest round-trip digit string; take its digits and exponent.
            let described = number.description.lowercased()
            let mantissa = described.split(separator: "e").first.map(String.init) ?? described
            let exponentPart = described.split(separator: "e").dropFirst().first.map { Int($0)! } ?? 0
            let parts = mantissa.split(separator: ".", omittingEmptySubsequences: false)
            let whole = String(parts[0])
            let fraction = parts.count > 1 ? String(parts[1]) : ""
            var digits = whole + fraction
            var pointAt = whole.count + exponentPart  // value = 0.digits × 10^pointAt, before trimming
            while digits.hasPrefix("0"), digits.count > 1 {
                digits.removeFirst()
                pointAt -= 1
            }
            while digits.hasSuffix("0"), digits.count > 1 { digits.removeLast() }
            let k = digits.count
            let n = pointAt
            if k <= n, n <= 21 { return digits + String(repeating: "0", count: n - k) }
            if 0 < n, n <= 21 { return String(digits.prefix(n)) + "." + String(digits.dropFirst(n)) }
            if -6 < n, n <= 0 { return "0." + String(repeating: "0", count: -n) + digits }
            let exponent = n - 1
            let sign = exponent >= 0 ? "+" : "-"
            let head = String(digits.prefix(1)) + (k > 1 ? "." + String(digits.dropFirst()) : "")
            return head + "e" + sign + String(abs(exponent))
        }
    }

    /// A node: a leaf, or an object that is never empty; either may carry a priority.
    public indirect enum Node: Equatable, Sendable {
        /// A string, number or boolean.
        case leaf(Leaf, priority: Leaf?)
        /// Children by name.
        case object([Key: Node], priority: Leaf?)
    }
}

/// A JSON document as a test writes it to a file or a command line: nulls, arrays, empty objects, repeated keys,
/// numbers as their text (`1e400` included) are all expressible, so that the model and the store both meet them.
public indirect enum JSONValue: Sendable {
    /// `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// A number, as it is written.
    case number(String)
    /// A string.
    case string(String)
    /// An array.
    case array([JSONValue])
    /// An object's members in the order written (a key may repeat).
    case object([(String, JSONValue)])

    /// The compact JSON text.
    public var text: String {
        switch self {
        case .null: "null"
        case .bool(let flag): flag ? "true" : "false"
        case .number(let text): text
        case .string(let string): RealtimeDatabaseModel.Leaf.quoted(string)
        case .array(let elements): "[" + elements.map(\.text).joined(separator: ",") + "]"
        case .object(let members):
            "{" + members.map { RealtimeDatabaseModel.Leaf.quoted($0.0) + ":" + $0.1.text }.joined(separator: ",")
                + "}"
        }
    }
}
