import Foundation
import PostgresTestSupport
import Testing
import TreeTestSupport

@testable import Storage

/// The emitter against the in-memory writer, without a database: whatever the shape of the keys, parts given in
/// export order must give the same text as writing the whole tree at once.
@Suite("Tree emitter")
struct TreeEmitterTests {
    static let optionSets: [JSONTextWriter.Options] = [
        .init(), .init(rendersArrays: false), .init(isPretty: true), .init(keepsPriorities: false),
        .init(isPretty: true, keepsPriorities: false),
    ]

    /// What writing `tree` at once gives.
    static func reference(_ tree: TreeValue?, _ options: JSONTextWriter.Options) -> String {
        var writer = JSONTextWriter(options: options)
        if let tree { writer.value(tree) } else { writer.null() }
        writer.finish()
        return String(decoding: writer.bytes, as: UTF8.self)
    }

    /// What the emitter gives for `parts`, in export order, with a frame budget of `budget` bytes, told the
    /// number of children of any node it asks about.
    static func emit(
        _ parts: [(path: [String], value: TreeValue)], _ options: JSONTextWriter.Options, budget: Int = 1 << 20
    ) throws -> (text: String, emitter: TreeEmitter) {
        var bytes: [UInt8] = []
        let emitter = TreeEmitter(options: options, frameMemoryBudget: budget) { bytes.append(contentsOf: $0) }
        for part in parts.sorted(by: { PartMerge.precedes($0.path, $1.path) }) {
            try emitter.add(part.path, part.value)
            if let path = emitter.countRequest {
                emitter.answerCountRequest(
                    Set(
                        parts.filter { $0.path.count > path.count && Array($0.path.prefix(path.count)) == path }
                            .map { $0.path[path.count] }
                    ).count)
            }
        }
        try emitter.finish()
        return (String(decoding: bytes, as: UTF8.self), emitter)
    }

    /// Expects the leaves of `tree`, added one by one, to give the reference text with every option set.
    static func expectStreamsLikeReference(
        _ tree: TreeValue, budgets: [Int] = [1 << 20, 64],
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        for options in optionSets {
            for budget in budgets {
                let got = try emit(tree.leaves(), options, budget: budget).text
                #expect(got == reference(tree, options), "\(options), budget \(budget)", sourceLocation: sourceLocation)
            }
        }
    }

    @Test(arguments: 0..<40)
    func randomTreesStreamAsTheyWriteWhole(seed: Int) throws {
        var random = RandomTree(seed: seed + 7000)
        try Self.expectStreamsLikeReference(random.database())
    }

    /// As an export writes typed rows: most leaves straight from bytes (`addDirectly`), the rest as parts, in any
    /// mix, so that the shortcut for children of the same parent meets every state the general way leaves.
    @Test(arguments: 0..<40)
    func randomTreesStreamWhenMostLeavesComeDirectly(seed: Int) throws {
        var random = RandomTree(seed: seed + 9000)
        let tree = random.database()
        var coin = SeededGenerator(state: UInt64(seed) &+ 17)
        for options in Self.optionSets {
            var bytes: [UInt8] = []
            let emitter = TreeEmitter(options: options, frameMemoryBudget: 64) { bytes.append(contentsOf: $0) }
            for (path, value) in tree.leaves().sorted(by: { PartMerge.precedes($0.path, $1.path) }) {
                var key = path.last ?? ""
                let direct = !path.isEmpty && coin.next() % 5 != 0
                let written =
                    try direct
                    && key.withUTF8 { key in
                        try emitter.addDirectly(key: key, under: Array(path.dropLast())) { $0.value(value) }
                    }
                if !written { try emitter.add(path, value) }
            }
            try emitter.finish()
            #expect(String(decoding: bytes, as: UTF8.self) == Self.reference(tree, options), "\(options)")
        }
    }

    @Test func arraysOfEveryShape() throws {
        func indexed(_ keys: some Sequence<Int>, _ value: (Int) -> TreeValue = { .number(Double($0)) }) -> TreeValue {
            .object(Dictionary(uniqueKeysWithValues: keys.map { (TreeKey(String($0)), value($0)) }))
        }
        let shapes: [TreeValue] = [
            indexed(0..<3000),
            // The largest index just under twice the count (an array with holes), and at it (an object).
            indexed(Array(0..<1000) + [1999]),
            indexed(Array(0..<1000) + [2001]),
            indexed([5]), indexed([0, 1, 2147483647]), indexed([2147483648, 2147483649]),
            // An array that turns out to be an object after many elements, and one nested in arrays.
            .object(indexed(0..<2000).children!.merging(["name": .string("x")]) { a, _ in a }),
            indexed(0..<50) { i in indexed(0..<(i % 4 + 1)) { j in indexed(0..<2) { .number(Double($0 + j + i)) } } },
            // Records inside an array, one with a priority (never an array then).
            indexed(0..<300) { i in .object(["v": .number(Double(i)), "s": .string("x\(i)")]) },
            .object(indexed(0..<10).children!.merging([TreeKey(FirebaseKey.priority): .number(1)]) { a, _ in a }),
        ]
        for shape in shapes {
            try Self.expectStreamsLikeReference(.object(["a": shape, "b": .bool(true)]))
            try Self.expectStreamsLikeReference(shape)
        }
    }

    @Test func epochKeysNeverWaitForALayout() throws {
        var logs: [TreeKey: TreeValue] = [:]
        for index in 0..<10_000 {
            logs[String(1_497_918_951_912 + index * 1000)] = .object(["t": .number(20.5), "h": .number(40)])
        }
        let (text, emitter) = try Self.emit(TreeValue.object(["logs": .object(logs)]).leaves(), .init(), budget: 4096)
        #expect(text == Self.reference(.object(["logs": .object(logs)]), .init()))
        // Keys above 2^31 are object keys at once: nothing is held or spilled.
        #expect(emitter.peakFrameBytes == 0)
        #expect(emitter.spilledBytes == 0)
    }

    @Test func aLargeArrayIsHeldWithinTheBudget() throws {
        let budget = 1 << 16
        let long = String(repeating: "z", count: 100)
        let array = TreeValue.object(
            Dictionary(
                uniqueKeysWithValues: (0..<20_000).map {
                    (TreeKey(String($0)), TreeValue.string(long))
                }))
        let tree = TreeValue.object(["photos": array])
        let (text, emitter) = try Self.emit(tree.leaves(), .init(), budget: budget)
        #expect(text == Self.reference(tree, .init()))
        #expect(emitter.spilledBytes > 2_000_000)
        // The writer's current piece and the two buffers, each drained past its budget.
        #expect(emitter.peakFrameBytes <= 3 * budget)
    }

    /// Numeric ids far apart look like array indexes one by one; once the frame spills, the node's child count
    /// shows they cannot be an array, and the rest streams as an object instead of going to the file.
    @Test func sparseNumericIdsStopWaitingOnceTheCountIsKnown() throws {
        let ids = TreeValue.object(
            Dictionary(
                uniqueKeysWithValues: (0..<5000).map {
                    (TreeKey(String(100_000_000 + $0 * 7)), TreeValue.object(["username": .string("u\($0)")]))
                }))
        let tree = TreeValue.object(["users": ids])
        var bytes: [UInt8] = []
        var asked: [[String]] = []
        let emitter = TreeEmitter(options: .init(), frameMemoryBudget: 4096) { bytes.append(contentsOf: $0) }
        for part in tree.leaves() {
            try emitter.add(part.path, part.value)
            if let path = emitter.countRequest {
                asked.append(path)
                emitter.answerCountRequest(path == ["users"] ? 5000 : nil)
            }
        }
        try emitter.finish()
        #expect(String(decoding: bytes, as: UTF8.self) == Self.reference(tree, .init()))
        #expect(asked == [["users"]])
        #expect(emitter.spilledBytes < 10_000, "\(emitter.spilledBytes)")
    }

    @Test func recordsMergeWithThePartsBelowThem() throws {
        // A typed record (an in-memory subtree) and unmapped values inside it, as the store gives them.
        let parts: [(path: [String], value: TreeValue)] = [
            (
                ["users", "u1"],
                .object(["username": .string("a"), "zeta": .number(1), "list": .object(["0": .bool(true)])])
            ),
            (["users", "u1", "list", "1"], .bool(false)),
            (["users", "u1", "middle", "x"], .string("m")),
            (["users", "u1", "username"], .string("replaced")),
            (["users", "u2"], .object(["username": .string("b")])),
        ]
        var tree = TreeValue.object([:])
        for part in parts { tree = tree.merging(TreeValue.object([:]).setting(part.value, at: part.path)) }
        for options in Self.optionSets {
            #expect(try Self.emit(parts, options).text == Self.reference(tree, options), "\(options)")
        }
    }

    @Test func leavesWrittenDirectlyInsideAHeldRecordMergeWithIt() throws {
        // As the export adds unmapped leaves that no later row lies below: straight from bytes when it can.
        let record = TreeValue.object(["username": .string("a"), "photo": .string("p"), ".priority": .number(7)])
        let leaves: [(path: [String], value: TreeValue)] = [
            (["users", "u1", "big", "a"], .string("x")), (["users", "u1", "big", "b"], .number(2)),
            (["users", "u1", "zz"], .bool(true)), (["users", "u2", "k"], .number(1)),
        ]
        var tree = TreeValue.object([:]).setting(record, at: ["users", "u1"])
        for leaf in leaves { tree = tree.merging(TreeValue.object([:]).setting(leaf.value, at: leaf.path)) }
        for options in Self.optionSets {
            var bytes: [UInt8] = []
            let emitter = TreeEmitter(options: options) { bytes.append(contentsOf: $0) }
            try emitter.add(["users", "u1"], record)
            for (path, value) in leaves {
                var key = path.last!
                let written = try key.withUTF8 { key in
                    try emitter.addDirectly(key: key, under: Array(path.dropLast())) { $0.value(value) }
                }
                if !written { try emitter.add(path, value) }
            }
            try emitter.finish()
            #expect(String(decoding: bytes, as: UTF8.self) == Self.reference(tree, options), "\(options)")
        }
    }

    @Test func anEmptyEmitterWritesNull() throws {
        for options in Self.optionSets {
            #expect(try Self.emit([], options).text == Self.reference(nil, options))
        }
    }
}

extension TreeValue {
    /// This value with `value` set at `path`.
    func setting(_ value: TreeValue, at path: [String]) -> TreeValue {
        var copy = self
        copy.set(value, at: path[...])
        return copy
    }
}
