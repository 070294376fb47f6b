import Foundation
import PostgresTestSupport
import Testing
import TreeTestSupport

@testable import Storage

/// Every node's path in `tree`, parents first, without priority pseudo-children (a console path cannot name them).
private func paths(in tree: TreeValue, prefix: [String] = []) -> [[String]] {
    guard let children = tree.children else { return [prefix] }
    // In key order, so that a seed picks the same paths in every process (dictionaries' order is per process).
    return [prefix]
        + children.filter { !$0.key.hasPrefix(".") }.sorted {
            $0.key.string.utf8.lexicographicallyPrecedes($1.key.string.utf8)
        }
        .flatMap { paths(in: $0.value, prefix: prefix + [$0.key.string]) }
}

/// The REST API's shallow=true, on an in-memory tree: a leaf as it is, an object's children as `true` unless
/// they are leaves (whose priorities go).
private func shallow(_ node: TreeValue) -> TreeValue {
    guard let children = node.children else { return node }
    return .object(
        children.filter { !$0.key.hasPrefix(".") }.mapValues {
            $0.children == nil ? $0 : $0[FirebaseKey.value] ?? .bool(true)
        })
}

/// An owner's `count` posts, keyed `-P1000`, `-P1001`, …: many rows under one child, for limit queries.
func numberedPosts(_ count: Int) -> TreeValue {
    .object(
        Dictionary(
            uniqueKeysWithValues: (0..<count).map {
                (TreeKey("-P\(1000 + $0)"), TreeValue.object(["image_url": .string("u\($0)")]))
            }))
}

func render(_ value: TreeValue?, options: JSONTextWriter.Options = .init()) -> String {
    var writer = JSONTextWriter(options: options)
    if let value { writer.value(value) } else { writer.null() }
    writer.finish()
    return String(decoding: writer.bytes, as: UTF8.self)
}

private func export(_ store: Store, at path: [String], shallow: Bool = false, options: JSONTextWriter.Options = .init())
    throws -> String
{
    var bytes: [UInt8] = []
    _ = try store.exportTree(at: path, options: ExportOptions(format: options, shallow: shallow)) {
        bytes.append(contentsOf: $0)
    }
    return String(decoding: bytes, as: UTF8.self)
}

@Suite("Exporting one node (get, export --path)")
struct PathExportTests {
    @Test(arguments: 0..<16)
    func everyNodeOfARandomTreeComesBackAlone(seed: Int) throws {
        var random = RandomTree(seed: seed)
        let tree = random.database()
        let store = try makeStore()
        try importJSON(random.json(tree), into: store)
        var generator = SeededGenerator(state: UInt64(seed) &+ 17)
        var candidates = paths(in: tree)
        candidates.shuffle(using: &generator)
        for path in candidates.prefix(60) + [["nothing"], ["users", "nobody", "deeper"]] {
            let node = tree.descendant(at: path)
            expectSameText(try export(store, at: path), render(node))
            let plain = JSONTextWriter.Options(keepsPriorities: false)
            expectSameText(try export(store, at: path, options: plain), render(node, options: plain))
            if let node, node.children?[FirebaseKey.value] == nil {
                expectSameText(try export(store, at: path, shallow: true), render(shallow(node)))
            }
        }
    }

    @Test func recordsAndTheirInsides() throws {
        let store = try consistentStore()
        #expect(try export(store, at: ["posts", "bob", "-Pb1", "poster", "username"]) == #""bob""#)
        #expect(try export(store, at: ["posts", "bob", "-Pb1", "poster"]) == #"{"uid":"bob","username":"bob"}"#)
        #expect(try export(store, at: ["chats", "alice", "-Ch1", "members"]) == #"{"alice":true,"bob":true}"#)
        #expect(try export(store, at: ["posts", "bob", "-Pb1", "nothing"]) == "null")
        #expect(try export(store, at: ["postLikes", "-Pb1", "alice"]) == "true")
        #expect(try export(store, at: ["posts", "bob"], shallow: true) == #"{"-Pb1":true,"-Pb2":true}"#)
        #expect(try export(store, at: ["users", "alice"], shallow: true) == #"{"username":"alice"}"#)
        #expect(try export(store, at: [], shallow: true).hasPrefix(#"{"chats":true,"followers":true"#))
    }

    @Test func gzipOutputIsAGzipStream() throws {
        let store = try consistentStore()
        var compressed: [UInt8] = []
        let gzip = try GzipWriter { compressed.append(contentsOf: $0) }
        _ = try store.exportTree { try gzip.write($0) }
        try gzip.finish()
        let source = try GzipSource(MemorySource(compressed), name: "export.json.gz")
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        var text: [UInt8] = []
        while case let count = try buffer.withUnsafeMutableBytes({ try source.read(into: $0) }), count > 0 {
            text += buffer[..<count]
        }
        #expect(compressed.starts(with: [0x1f, 0x8b]))
        expectSameText(String(decoding: text, as: UTF8.self), try exportJSON(store))
    }
}

/// RTDB's query semantics restated plainly for the tests: sort every child by (ordered value, key), filter, cut.
enum ReferenceQuery {
    /// Keys matching `-?0*[0-9]{1,10}` within the 32-bit range (../shared/firebase-format.md) are integers.
    static func integer(_ key: String) -> Int32? {
        let digits = key.hasPrefix("-") ? key.dropFirst() : Substring(key)
        let significant = digits.drop { $0 == "0" }
        guard !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isNumber }), significant.count <= 10 else {
            return nil
        }
        return Int32(
            exactly: (Int64(significant.isEmpty ? "0" : String(significant)) ?? 0) * (key.hasPrefix("-") ? -1 : 1))
    }

    static func keyPrecedes(_ a: String, _ b: String) -> Bool {
        switch (integer(a), integer(b)) {
        case let (x?, y?): return x != y ? x < y : (a.count != b.count ? a.count < b.count : a < b)
        case (_?, nil): return true
        case (nil, _?): return false
        default: return a.utf16.lexicographicallyPrecedes(b.utf16)
        }
    }

    static func plain(_ value: TreeValue?) -> TreeValue? {
        guard let value, let children = value.children else { return value }
        if let leaf = children[".value"] { return leaf }
        let rest = children.filter { $0.key != ".priority" }
        return rest.isEmpty ? nil : .object(rest)
    }

    /// -1, 0 or 1: null < false < true < numbers < strings < objects.
    static func compare(_ a: TreeValue?, _ b: TreeValue?, byKey: Bool) -> Int {
        if byKey, case .string(let x)? = a, case .string(let y)? = b {
            return x.utf8.elementsEqual(y.utf8) ? 0 : (keyPrecedes(x, y) ? -1 : 1)
        }
        func rank(_ v: TreeValue?) -> Int {
            switch v {
            case nil: 0
            case .bool(let flag)?: flag ? 2 : 1
            case .number?: 3
            case .string?: 4
            case .object?: 5
            }
        }
        if rank(a) != rank(b) { return rank(a) < rank(b) ? -1 : 1 }
        switch (a, b) {
        case let (.number(x)?, .number(y)?): return x == y ? 0 : (x < y ? -1 : 1)
        case let (.string(x)?, .string(y)?):
            return x.utf16.elementsEqual(y.utf16) ? 0 : (x.utf16.lexicographicallyPrecedes(y.utf16) ? -1 : 1)
        default: return 0
        }
    }

    static func run(_ query: TreeQuery, on node: TreeValue?) -> TreeValue? {
        guard let node else { return nil }
        guard let children = node.children else { return node }
        let byKey = query.order == .key
        func orderValue(_ key: String, _ value: TreeValue) -> TreeValue? {
            switch query.order {
            case .key: .string(key)
            case .value: plain(value)
            case .child(let path): plain(value.descendant(at: path))
            }
        }
        var items = children.filter { !$0.key.hasPrefix(".") }.map {
            (key: $0.key.string, value: $0.value, order: orderValue($0.key.string, $0.value))
        }
        items = items.filter { item in
            (query.equal.map { compare(item.order, $0, byKey: byKey) == 0 } ?? true)
                && (query.start.map { compare(item.order, $0, byKey: byKey) >= 0 } ?? true)
                && (query.end.map { compare(item.order, $0, byKey: byKey) <= 0 } ?? true)
        }
        items.sort { a, b in
            let order = compare(a.order, b.order, byKey: byKey)
            return order != 0 ? order < 0 : keyPrecedes(a.key, b.key)
        }
        if let first = query.limitToFirst { items = Array(items.prefix(first)) }
        if let last = query.limitToLast { items = Array(items.suffix(last)) }
        return items.isEmpty
            ? nil : .object(Dictionary(uniqueKeysWithValues: items.map { (TreeKey($0.key), $0.value) }))
    }
}

@Suite("get with query options")
struct QueryExportTests {
    @Test(arguments: 0..<48)
    func queriesAgreeWithTheReferenceOnRandomTrees(seed: Int) throws {
        var random = RandomTree(seed: seed + 100)
        let tree = random.database()
        let store = try makeStore()
        try importJSON(random.json(tree), into: store)
        var generator = SeededGenerator(state: UInt64(seed) &+ 991)
        let objects = paths(in: tree).filter { tree.descendant(at: $0)?.children != nil }
        for _ in 0..<40 {
            let path = objects.randomElement(using: &generator)!
            let node = tree.descendant(at: path)!
            let children = node.children!.filter { !$0.key.hasPrefix(".") }
                .sorted { $0.key.string.utf8.lexicographicallyPrecedes($1.key.string.utf8) }
            let grandchildKeys = children.compactMap(\.value.children).flatMap(\.keys).filter { !$0.hasPrefix(".") }
                .map(\.string).sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
            let order: TreeQuery.Order =
                switch Int.random(in: 0..<3, using: &generator) {
                case 0: .key
                case 1: .value
                default: .child([grandchildKeys.randomElement(using: &generator) ?? "missing"])
                }
            // Bounds taken from the children's own ordered values, so that filters cut somewhere.
            let samples: [TreeValue?] = children.map { key, value in
                switch order {
                case .key: .string(key.string)
                case .value: ReferenceQuery.plain(value)
                case .child(let sub): ReferenceQuery.plain(value.descendant(at: sub))
                }
            }
            func bound() -> TreeValue? {
                Int.random(in: 0..<3, using: &generator) == 0 ? (samples.randomElement(using: &generator) ?? nil) : nil
            }
            var query = TreeQuery(order: order)
            if Bool.random(using: &generator) {
                query.equal = bound()
            } else {
                (query.start, query.end) = (bound(), bound())
            }
            switch Int.random(in: 0..<3, using: &generator) {
            case 0: query.limitToFirst = Int.random(in: 1...4, using: &generator)
            case 1: query.limitToLast = Int.random(in: 1...4, using: &generator)
            default: break
            }
            var bytes: [UInt8] = []
            _ = try store.exportTree(at: path, query: query) { bytes.append(contentsOf: $0) }
            let got = String(decoding: bytes, as: UTF8.self)
            let expected = render(ReferenceQuery.run(query, on: node))
            // Compared as bytes: `==` on strings would take "é" and "e\u{301}" for the same key.
            #expect(
                got.utf8.elementsEqual(expected.utf8),
                "get /\(path.joined(separator: "/")) with \(query): \(firstDifference(got, expected))")
        }
    }

    /// The reads for the first or last N children go by pages (a LIMIT, then an OFFSET past a full page and four
    /// times the LIMIT): children with hundreds of rows each (posts, unmapped leaves), typed and digit-led keys
    /// side by side, reads that end exactly at a page's end (64 dash-led posts, 64 + 256 unmapped leaves) and
    /// the largest limit give what the reference gives.
    @Test func limitsOverChildrenWithManyRows() throws {
        func leaves(_ count: Int) -> TreeValue {
            .object(
                Dictionary(uniqueKeysWithValues: (0..<count).map { (TreeKey("k\(1000 + $0)"), TreeValue.number(1)) }))
        }
        let postsNode = TreeValue.object([
            "alice": numberedPosts(3), "bob": numberedPosts(150), "zed": numberedPosts(300), "7up": numberedPosts(120),
            "9": numberedPosts(90), "-x": numberedPosts(64),
        ])
        let logsNode = TreeValue.object(["a": leaves(2), "b": leaves(200), "c": leaves(70), "d": leaves(48)])
        let store = try makeStore()
        try importJSON(TreeValue.object(["posts": postsNode, "logs": logsNode]).json, into: store)
        for (path, node) in [(["posts"], postsNode), (["logs"], logsNode)] {
            // Int.max: a first page as large as pages get, which must neither overflow nor leave a row out.
            for query in [1, 2, 3, 5, 9, Int.max].flatMap({
                [TreeQuery(order: .key, limitToFirst: $0), TreeQuery(order: .key, limitToLast: $0)]
            }) {
                var bytes: [UInt8] = []
                _ = try store.exportTree(at: path, query: query) { bytes.append(contentsOf: $0) }
                let expected = render(ReferenceQuery.run(query, on: node))
                expectSameText(String(decoding: bytes, as: UTF8.self), expected)
            }
        }
    }

    /// At the root, typed tables' root keys and unmapped top-level keys are the children that bounds select.
    @Test func boundsAtTheRootSelectTopLevelKeys() throws {
        let store = try makeStore()
        try importJSON(
            #"{"a":1,"chats":{},"posts":{"u":{"-P":{"image_url":"x"}}},"q":{"r":2},"users":{"u":{"username":"n"}},"zz":3}"#,
            into: store)
        func get(_ query: TreeQuery) throws -> String {
            var bytes: [UInt8] = []
            _ = try store.exportTree(at: [], query: query) { bytes.append(contentsOf: $0) }
            return String(decoding: bytes, as: UTF8.self)
        }
        #expect(
            try get(TreeQuery(order: .key, start: .string("p"), end: .string("r")))
                == #"{"posts":{"u":{"-P":{"image_url":"x"}}},"q":{"r":2}}"#)
        #expect(try get(TreeQuery(order: .key, limitToLast: 2)) == #"{"users":{"u":{"username":"n"}},"zz":3}"#)
        #expect(try get(TreeQuery(order: .key, end: .string("q"), limitToLast: 1)) == #"{"q":{"r":2}}"#)
        #expect(try get(TreeQuery(order: .key, equal: .string("users"))) == #"{"users":{"u":{"username":"n"}}}"#)
        #expect(try get(TreeQuery(order: .key, start: .string("zzz"))) == "null")
    }

    /// "e\u{301}" and "é" are two keys (Firebase compares bytes), however Swift's `==` sees them; rows of the
    /// one never land in the other.
    @Test func canonicallyEquivalentKeysStayApart() throws {
        let store = try makeStore()
        let json = #"{"e\#u{301}":{"b":1,"c":2},"é":{"a":3,"d":4}}"#
        try importJSON(json, into: store)
        expectSameText(try exportJSON(store), json)
        var bytes: [UInt8] = []
        _ = try store.exportTree(at: [], query: TreeQuery(order: .key, equal: .string("é"))) {
            bytes.append(contentsOf: $0)
        }
        expectSameText(String(decoding: bytes, as: UTF8.self), #"{"é":{"a":3,"d":4}}"#)
    }

    @Test func theIssuesExamples() throws {
        let store = try consistentStore()
        func get(_ path: [String], _ query: TreeQuery) throws -> String {
            var bytes: [UInt8] = []
            _ = try store.exportTree(at: path, query: query) { bytes.append(contentsOf: $0) }
            return String(decoding: bytes, as: UTF8.self)
        }
        #expect(
            try get(["timeline", "alice"], TreeQuery(order: .key, limitToLast: 2))
                == #"{"-Pb1":{"poster_uid":"bob"},"-Pb2":{"poster_uid":"bob"}}"#)
        #expect(
            try get(["posts", "bob"], TreeQuery(order: .child(["created_at"]), limitToFirst: 1)).hasPrefix(#"{"-Pb1":"#)
        )
        #expect(
            try get(["users"], TreeQuery(order: .child(["username"]), equal: .string("carol")))
                == #"{"carol":{"username":"carol"}}"#)
        #expect(try get(["users"], TreeQuery(order: .key, start: .string("b"))).hasPrefix(#"{"bob":"#))
        #expect(try get(["nothing"], TreeQuery(order: .key)) == "null")
        #expect(try get(["users", "alice", "username"], TreeQuery(order: .key)) == #""alice""#)
    }
}

/// Reads the mirror batches for a transaction's nodes: each answers what its one-at-a-time twin answers.
struct ChildrenByKeyTests {
    @Test func theChildrenNamedAreTheirOwnExports() throws {
        let store = try makeStore()
        // Digit-led keys (read in RTDB order), a record with unmapped fields beside its typed ones and a priority,
        // a leaf among records, posts of an owner and a feed post under one root.
        let json = #"""
            {"users": {"1": {"username": "one"}, "10": {"username": "ten", "bio": {"a": [1, 2]}, ".priority": 3},
                       "2": "a leaf", "-x": {"username": "dash"}, "ab": {"username": "ab"}, "a": {"username": "a"}},
             "posts": {"u1": {"-P1": {"imageURL": "x", "imageHeight": 1}},
                       "f1": {"imageFileURL": "y", "votes": 2, "user": "u1", "timestamp": 5}},
             "misc": {"k": {"deep": true}, "k2": 1}}
            """#
        try importJSON(json, into: store)
        let cases: [([String], [String])] = [
            (["users"], ["10", "2", "a", "missing", "1"]), (["users"], ["ab"]), (["users"], []),
            (["posts"], ["u1", "f1"]), (["misc"], ["k", "k2"]), (["posts", "u1"], ["-P1"]),
        ]
        for (path, keys) in cases {
            let children = try store.imports.exportedChildren(of: path, keys: keys)
            var expected: [TreeKey: TreeValue] = [:]
            for key in keys {
                if let value = try store.imports.exportedValue(at: path + [key]) { expected[TreeKey(key)] = value }
            }
            #expect(children == expected, "\(path) \(keys)")
        }
        let paths: [[String]] = [
            ["users", "10", "bio", "a"], ["users", "1", "username"], ["users", "2", "x"], ["users", "9", "x"],
            ["posts", "u1", "-P1", "imageURL"], ["posts", "f1", "votes"], ["posts", "u1", "-P2", "x"],
            ["misc", "k", "deep"], ["users", "10"], ["users"], [],
        ]
        let batched = try store.treeRows.recordPaths(holding: paths)
        #expect(batched == (try paths.map { try store.treeRows.recordPath(holding: $0) }))
        #expect(
            batched[0] == ["users", "10"] && batched[4] == ["posts", "u1", "-P1"] && batched[5] == ["posts", "f1"])
    }
}
