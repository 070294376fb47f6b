import Foundation
import PostgresClient
import PostgresTestSupport
import Testing

@testable import Storage

/// Shapes real exports have and generated ones do not: nodes keyed by integers (arrays, numeric uids, epoch
/// timestamps), keys of every RTDB ordering class side by side, and values of hundreds of KB. Export must give the
/// same text as writing the tree at once, reading only what it must.
@Suite("Export at any shape")
struct ExportShapeTests {
    /// Keys of every ordering class: integers with signs and leading zeros, the 32-bit edges, digit-led text,
    /// push IDs, non-ASCII text below and above U+E000.
    static let mixedKeys = [
        "-2147483648", "-10", "-9", "-07", "-7", "-0", "0", "00", "7", "07", "10", "2147483647", "2147483648",
        "12345678901", "1497918951912", "1a", "1-2", "-0abc", "-KmT0UpNzWDunZO_uttl", "0Ukcg3IZ0t7TTqAVm8YRhXOxAlVC",
        "alice", "a b", "é", "Москва", "😀", "\u{E000}", "\u{FFFD}",
    ]

    static func object(_ keys: some Sequence<String>, _ value: (String) -> TreeValue) -> TreeValue {
        .object(Dictionary(uniqueKeysWithValues: keys.map { (TreeKey($0), value($0)) }))
    }

    static func shapes() -> [TreeValue] {
        let indexes = (0..<3000).map(String.init)
        return [
            .object(["arr": object(indexes) { .object(["v": .number(Double($0)!), "s": .string("x" + $0)]) }]),
            .object([
                "holes": object((0..<500).map { String($0 * 2) } + ["999"]) { .string($0) },
                "not": object((0..<500).map { String($0 * 2) } + ["1000"]) { .string($0) },
            ]),
            .object([
                "logs": object((0..<2000).map { String(1_497_918_951_912 + $0 * 1000) }) { _ in
                    .object(["t": .number(20.5), "h": .number(40)])
                }
            ]),
            .object(["users": object((1...1000).map(String.init)) { .object(["username": .string("u" + $0)]) }]),
            .object([
                "users": object(mixedKeys) { .object(["username": .string("user " + $0)]) },
                "posts": object(mixedKeys.prefix(8)) { owner in
                    object(mixedKeys.suffix(12)) { .object(["image_url": .string(owner + "/" + $0)]) }
                },
                "followers": object(mixedKeys) { _ in object(mixedKeys.suffix(6)) { _ in .bool(true) } },
                "messages": object(["c1", "7"]) { _ in object(mixedKeys) { .object(["content": .string($0)]) } },
                "other": object(mixedKeys) { _ in object(mixedKeys.prefix(9)) { .string($0) } },
            ]),
        ]
    }

    @Test(arguments: 0..<5)
    func everyShapeExportsAsTheTreeWritesWhole(shape: Int) throws {
        let tree = Self.shapes()[shape]
        let store = try makeStore()
        var writer = JSONTextWriter(options: .init(rendersArrays: false))
        writer.value(tree)
        #expect(try importJSON(String(decoding: writer.bytes, as: UTF8.self), into: store).rejects.isEmpty)
        for options in TreeEmitterTests.optionSets {
            expectSameText(try exportJSON(store, options: options), TreeEmitterTests.reference(tree, options))
        }
        // Each node alone, as get prints it, and its first and last children by key.
        for key in tree.children!.keys.map(\.string) {
            var bytes: [UInt8] = []
            _ = try store.exportTree(at: [key]) { bytes.append(contentsOf: $0) }
            expectSameText(String(decoding: bytes, as: UTF8.self), render(tree[key]))
            for query in [
                TreeQuery(order: .key, limitToFirst: 3), TreeQuery(order: .key, limitToLast: 3),
                TreeQuery(order: .key, start: .string("1"), end: .string("a")),
            ] {
                bytes = []
                _ = try store.exportTree(at: [key], query: query) { bytes.append(contentsOf: $0) }
                #expect(
                    String(decoding: bytes, as: UTF8.self) == render(ReferenceQuery.run(query, on: tree[key]!)),
                    "\(key) \(query)")
            }
        }
        #expect(
            try store.connection.query(
                "SELECT count(*) FROM unmapped_values WHERE sort_key <> rtdb_path_order(root, path)")[0].decode(
                    Int.self, at: 0) == 0)
    }

    /// Nodes of one table side by side, some holding keys that need RTDB order (integers, digit-led text, U+E000)
    /// and some not, below roots keyed either way: a read below a root asks the question of its node alone.
    static let neighbours = #"""
        {"following": {"u1": {"10": true, "9": true, "b": true, "a": true}, "u2": {"b": true, "a": true, "-x": true},
                       "7": {"b": true, "2": true}, "08": {"a": true}, "u3": {"a\uE000": true, "a😀": true}},
         "posts": {"u1": {"-K2": {"image_url": "x"}, "-K1": {"image_url": "y"}},
                   "u2": {"10": {"image_url": "a"}, "9": {"image_url": "b"}, "x": {"image_url": "c"}},
                   "3": {"-K": {"image_url": "d"}}},
         "messages": {"c1": {"-M2": {"content": "p"}, "-M1": {"content": "q"}}, "c2": {"3": {"content": "r"},
                      "20": {"content": "s"}, "m": {"content": "t"}}},
         "postLikes": {"k1": {"10": true, "9": true}, "k2": {"b": true, "a": true}, "5": {"z": true, "y": true}},
         "users": {"1": {"username": "one"}, "b": {"username": "bee"}}}
        """#

    /// Every node one and two levels down, `get` as it prints it and with limits and bounds by key.
    static func expectEveryNodeReadsInOrder(
        _ store: Store, _ json: String, sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let tree = try #require(try TreeValue.parse(json: json))
        var paths: [[String]] = []
        for root in tree.children?.keys.map(\.string) ?? [] {
            paths.append([root])
            for child in tree[root]?.children?.keys.map(\.string) ?? [] { paths.append([root, child]) }
        }
        for path in paths {
            guard let node = path.dropFirst().reduce(tree[path[0]], { $0?[$1] }) else {
                Issue.record("no node at \(path)", sourceLocation: sourceLocation)
                continue
            }
            var bytes: [UInt8] = []
            _ = try store.exportTree(at: path) { bytes.append(contentsOf: $0) }
            #expect(String(decoding: bytes, as: UTF8.self) == render(node), "\(path)", sourceLocation: sourceLocation)
            for query in [
                TreeQuery(order: .key, limitToFirst: 2), TreeQuery(order: .key, limitToLast: 2),
                TreeQuery(order: .key, start: .string("1"), end: .string("a")),
            ] {
                bytes = []
                _ = try store.exportTree(at: path, query: query) { bytes.append(contentsOf: $0) }
                #expect(
                    String(decoding: bytes, as: UTF8.self) == render(ReferenceQuery.run(query, on: node)),
                    "\(path) \(query)", sourceLocation: sourceLocation)
            }
        }
    }

    @Test func aNodeBelowARootIsReadInOrderWhateverItsNeighboursHold() throws {
        let store = try makeStore()
        try importJSON(Self.neighbours, into: store)
        try Self.expectEveryNodeReadsInOrder(store, Self.neighbours)
    }

    /// A table read whole in primary-key order is sorted when byte order misplaces one of its keys, in any key
    /// column and of either kind: an integer, or a character from U+E000 beside an astral one (UTF-8 puts U+E000
    /// first, UTF-16 and RTDB the astral one). The question is answered by the key-order indexes (migration 0020).
    @Test(arguments: [
        (#"{"users":{"a\uE000":{"username":"1"},"a😀":{"username":"2"},"b":{"username":"3"}}}"#, "users"),
        (#"{"followers":{"u1":{"10":true,"9":true,"x":true}}}"#, "followers"),
        (#"{"followers":{"u1":{"0000000000000010":true,"-K":true,"1497918951912":true}}}"#, "followers"),
        (#"{"followers":{"u1":{"-0000000000000010":true,"-!":true}}}"#, "followers"),
        (#"{"followers":{"u1":{"a\uE000":true,"a😀":true,"b":true}}}"#, "followers"),
        (#"{"followers":{"10":{"x":true},"9":{"y":true},"a":{"z":true}}}"#, "followers"),
        (#"{"followers":{"b\uE000":{"x":true},"b😀":{"y":true},"c":{"z":true}}}"#, "followers"),
    ])
    func keysByteOrderMisplacesAreSortedInAnyKeyColumn(json: String, table: String) throws {
        let tree = try TreeValue.parse(json: json)
        let store = try makeStore()
        try importJSON(json, into: store)
        var bytes: [UInt8] = []
        let report = try store.exportTree { bytes.append(contentsOf: $0) }
        expectSameText(String(decoding: bytes, as: UTF8.self), render(tree))
        #expect(report.sortedTables == [table])
    }

    /// Digit-led text keys need RTDB order for range reads only: a table read whole keeps primary-key order, and
    /// the report lists no table as sorted.
    @Test func digitLedTextKeysLeaveAWholeTableInKeyOrder() throws {
        let json = #"{"followers":{"1b":{"2x":true,"-K":true},"1a":{"9z":true}},"users":{"0u":{"username":"a"}}}"#
        let store = try makeStore()
        try importJSON(json, into: store)
        var bytes: [UInt8] = []
        let report = try store.exportTree { bytes.append(contentsOf: $0) }
        expectSameText(String(decoding: bytes, as: UTF8.self), render(try TreeValue.parse(json: json)))
        #expect(report.sortedTables.isEmpty)
    }

    /// The plans of what reads or asks about keys in RTDB order, for each typed table: whether byte order
    /// misplaces a key, whether any key needs RTDB order, and the first rows in that order. Sequential scans are
    /// off (on Citus, on the workers too), so a plan names the key-order index whenever it can serve at all.
    static func keyOrderPlans(on store: Store) throws -> [(table: TreeTable, question: String, plan: String)] {
        var plans: [(TreeTable, String, String)] = []
        try store.connection.execute("BEGIN")
        defer { _ = try? store.connection.execute("ROLLBACK") }
        try store.connection.execute("SET LOCAL citus.propagate_set_commands = 'local'")
        try store.connection.execute("SET LOCAL enable_seqscan = off")
        for table in TreeTable.allCases where table.rootKey != nil {
            let order = table.keyColumns.map(table.orderExpression).joined(separator: ", ")
            let read: Query =
                "SELECT 1 FROM \(identifier: table.name) WHERE \(table.needsOrderCondition) ORDER BY \(order) LIMIT 3"
            for (question, query) in [
                ("misordered", table.misorderedRowsQuery()), ("ordered", table.orderedRowsQuery()), ("read", read),
            ] {
                let lines = try store.connection.query("EXPLAIN \(query)").map { try $0.decode(String.self, at: 0) }
                plans.append((table, question, lines.joined(separator: "\n")))
            }
        }
        return plans
    }

    /// Whether byte order misplaces a key is answered by the key-order index's own tuples (its last column is the
    /// question's condition), and the other questions and reads in RTDB order walk that index too.
    @Test func keyOrderIndexesAnswerTheirQuestions() throws {
        for (table, question, plan) in try Self.keyOrderPlans(on: try makeStore()) {
            #expect(plan.contains("\(table.name)_key_order"), "\(table.name) \(question): \(plan)")
            if question == "misordered" { #expect(plan.contains("Index Cond") && !plan.contains("Filter"), "\(plan)") }
        }
    }

    /// The first or last N children by key cost rows in proportion to N, not to the node's size, whatever the keys.
    @Test func limitsReadRowsInProportionToTheLimit() throws {
        let letters = (0..<5000).map { "k" + String($0) }
        let numbers = (0..<5000).map { String(100_000_000 + $0 * 7) }
        let store = try makeStore()
        let tree = TreeValue.object([
            "logs": Self.object((0..<5000).map { String(1_497_918_951_912 + $0 * 1000) }) { _ in .number(1) },
            "arr": Self.object((0..<5000).map(String.init)) { .string($0) },
            "users": Self.object(numbers + letters.prefix(100) + Self.mixedKeys) { .object(["username": .string($0)]) },
            "posts": .object(["alice": Self.object(numbers) { .object(["image_url": .string($0)]) }]),
        ])
        try importJSON(render(tree, options: .init(rendersArrays: false)), into: store)
        for path in [["logs"], ["arr"], ["users"], ["posts", "alice"]] {
            let node = tree.descendant(at: path)!
            for query in [
                TreeQuery(order: .key, limitToFirst: 2), TreeQuery(order: .key, limitToLast: 2),
                TreeQuery(order: .key, start: .string("100000700"), limitToFirst: 2),
            ] {
                var bytes: [UInt8] = []
                let report = try store.exportTree(at: path, query: query) { bytes.append(contentsOf: $0) }
                #expect(
                    String(decoding: bytes, as: UTF8.self) == render(ReferenceQuery.run(query, on: node)),
                    "\(path) \(query)")
                // A first batch per stream and cursor (32 rows), never the node's thousands.
                #expect(report.rowsFetched <= 300, "\(path) \(query): \(report.rowsFetched) rows")
            }
        }
    }

    /// Rows whose values are large come without them and are completed one by one, so no batch holds more than
    /// its budget however large the values.
    @Test func largeValuesKeepBatchesBoundedInBytes() throws {
        let photo = String(repeating: "iVBORw0KGgo", count: 30_000)
        let tree = TreeValue.object([
            "photos": Self.object((0..<40).map { "p\($0)" }) { .string($0 + photo) },
            "users": Self.object((0..<30).map { "u\($0)" }) { .object(["username": .string($0 + photo)]) },
            "small": Self.object((0..<3000).map { "s\($0)" }) { .string($0) },
        ])
        let store = try makeStore()
        try importJSON(render(tree), into: store)
        var bytes: [UInt8] = []
        let report = try store.exportTree(at: []) { bytes.append(contentsOf: $0) }
        expectSameText(String(decoding: bytes, as: UTF8.self), render(tree))
        for path in [["photos"], ["users"]] {
            var bytes: [UInt8] = []
            let report = try store.exportTree(at: path) { bytes.append(contentsOf: $0) }
            expectSameText(String(decoding: bytes, as: UTF8.self), render(tree.descendant(at: path)))
            #expect(report.largestBatchBytes <= PartStream.batchBytes, "\(path): \(report.largestBatchBytes)")
            #expect(report.largestBatchBytes < photo.utf8.count, "\(path): \(report.largestBatchBytes)")
        }
        #expect(report.largestBatchBytes <= PartStream.batchBytes)
    }

    /// Ordering by a child's value holds the limit's number of order values, and gives what a sort of the whole
    /// node would.
    @Test func valueOrderOnANumericNode() throws {
        let tree = TreeValue.object([
            "logs": Self.object((0..<2000).map { String(1_497_918_951_912 + $0) }) { key in
                .object(["t": .number(Double(Int(key)! % 97)), "h": .number(40)])
            }
        ])
        let store = try makeStore()
        try importJSON(render(tree), into: store)
        for query in [
            TreeQuery(order: .child(["t"]), limitToLast: 3), TreeQuery(order: .child(["t"]), equal: .number(5)),
            TreeQuery(order: .value, limitToFirst: 2),
        ] {
            var bytes: [UInt8] = []
            _ = try store.exportTree(at: ["logs"], query: query) { bytes.append(contentsOf: $0) }
            #expect(
                String(decoding: bytes, as: UTF8.self) == render(ReferenceQuery.run(query, on: tree["logs"]!)),
                "\(query)")
        }
    }
}
