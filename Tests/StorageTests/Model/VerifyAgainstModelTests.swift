import Foundation
import PostgresTestSupport
import Testing
import TreeTestSupport

@testable import Storage

/// Random files (arrays, nulls, empty objects, keys out of order, values Firebase refuses) imported with their
/// rejects let through, then random writes to the store and a change by SQL: `verify` of the file lists exactly
/// the model's differences between what import kept of the file and what the store now holds, plus the file's
/// rejects.
@Suite("verify against the model")
struct VerifyAgainstModelTests {
    static let files = ProcessInfo.processInfo.environment["MODEL_SEQUENCES"].flatMap { Int($0) }.map { $0 / 4 } ?? 60

    @Test(arguments: 0..<4)
    func verifyListsWhatTheModelDoes(shard: Int) throws {
        let store = try makeStore()
        for seed in stride(from: UInt64(shard), to: UInt64(Self.files), by: 4) {
            var files = RandomFile(seed: seed)
            let file = files.document()
            try importJSON(
                file.text, into: store, options: ImportOptions(maximumRejects: 1000, allowsEmptying: true))
            var (kept, rejected) = RealtimeDatabaseModel.nodeDroppingRejects(from: file, at: [])
            if case .leaf? = kept { kept = nil }
            var model = RealtimeDatabaseModel(root: kept)
            var generator = ModelOperationGenerator(seed: seed &+ 1000)
            var steps: [String] = []
            for _ in 0..<files.int(0...4) {
                let operation = generator.operation()
                guard case .set(let path, let value) = operation, !path.isEmpty else { continue }
                var expected = model
                guard (try? expected.set(value, at: path)) != nil, expected.root != nil,
                    (try? store.write(.set(json: value.text), at: path)) != nil
                else { continue }
                model = expected
                steps.append(operation.description)
            }
            if files.int(0...1) == 1 {
                // A change by SQL, as an operator's UPDATE would make it: one unmapped leaf gets another value.
                let leaves = try store.connection.query(
                    """
                    SELECT root, path FROM unmapped_values WHERE path[cardinality(path)] NOT LIKE '.%'
                    ORDER BY root, path
                    """
                ).map { [try $0.decode(String.self, at: 0)] + (try $0.decode([String].self, at: 1)) }
                if !leaves.isEmpty {
                    let path = leaves[files.int(0...leaves.count - 1)]
                    try store.connection.execute(
                        """
                        UPDATE unmapped_values SET string_value = 'by SQL', number_value = NULL, boolean_value = NULL
                        WHERE root = \(path[0]) AND path = \(Array(path.dropFirst()))
                        """)
                    try model.set(.string("by SQL"), at: path)
                    steps.append("UPDATE the leaf /\(path.joined(separator: "/")) to \"by SQL\"")
                }
            }
            let report = try store.verify(source: MemorySource(file.text), options: VerifyOptions(maxListed: 10_000))
            let listed = Set(
                report.differences.map { RealtimeDatabaseModel.Difference(path: $0.path, kind: $0.kind.rawValue) })
            let expected = Set(
                Self.differences(file: file, kept: kept, store: model.root, at: [])
                    + rejected.map { RealtimeDatabaseModel.Difference(path: $0, kind: "rejected") })
            guard listed == expected, report.differences.count == listed.count else {
                Issue.record(
                    """
                    seed \(seed): verify listed \(report.differences.map { "/" + $0.path.joined(separator: "/") + " " + $0.kind.rawValue })
                    the model expects \(expected.map(\.description).sorted())
                    file: \(file.text)
                    then: \(steps.joined(separator: "\n      "))
                    """)
                return
            }
        }
    }
}

extension VerifyAgainstModelTests {
    /// The model's differences as verify lists them: at the shallowest node on one side only, except that where
    /// the file writes an object with something in it (if only empty objects) and the store holds an object, the
    /// children are compared, since verify reads the file once and cannot know ahead that the object holds nothing.
    static func differences(
        file: JSONValue?, kept: RealtimeDatabaseModel.Node?, store: RealtimeDatabaseModel.Node?, at path: [String]
    ) -> [RealtimeDatabaseModel.Difference] {
        var members: [(String, JSONValue)] = []
        switch file {
        case .object(let written): members = written
        case .array(let elements): members = elements.enumerated().map { (String($0.offset), $0.element) }
        default: break
        }
        var last: [RealtimeDatabaseModel.Key: JSONValue] = [:]
        for (key, value) in members { last[RealtimeDatabaseModel.Key(key)] = value }  // the last one wins
        last = last.filter { if case .null = $0.value { false } else { true } }
        guard !last.isEmpty, case .object(let stored, let storedPriority)? = store else {
            return RealtimeDatabaseModel.differences(source: kept, store: store, at: path)
        }
        var keptChildren: [RealtimeDatabaseModel.Key: RealtimeDatabaseModel.Node] = [:]
        var keptPriority: RealtimeDatabaseModel.Leaf?
        if case .object(let children, let priority)? = kept { (keptChildren, keptPriority) = (children, priority) }
        var found = RealtimeDatabaseModel.priorityDifference(keptPriority, storedPriority, at: path)
        for key in Set(last.keys).union(stored.keys) where RealtimeDatabaseModel.keyProblem(key.string) == nil {
            found += differences(file: last[key], kept: keptChildren[key], store: stored[key], at: path + [key.string])
        }
        return found
    }
}

/// Random JSON documents shaped like exports, with what a real file may hold that is no node (nulls, empty
/// objects and arrays), arrays for integer-keyed objects, keys in any order, and now and then what Firebase
/// refuses (a bad key, a number beyond a double).
struct RandomFile {
    var random: SeededGenerator

    init(seed: UInt64) { random = SeededGenerator(state: seed &* 0xD1B5_4A32_D192_ED03 &+ 3) }

    mutating func int(_ range: ClosedRange<Int>) -> Int { Int.random(in: range, using: &random) }
    mutating func pick<T>(_ choices: [T]) -> T { choices[int(0...choices.count - 1)] }

    mutating func document() -> JSONValue {
        .object(
            (0..<int(1...4)).map { _ in
                (pick(ModelOperationGenerator.roots), node(depth: 3))
            })
    }

    mutating func node(depth: Int) -> JSONValue {
        switch int(0...20) {
        case 0: return .null
        case 1: return .object([])
        case 2: return .object([("e", .object([]))])
        case 3: return .array([.object([])])
        case 4: return .number("1e400")
        case 5...6 where depth > 0: return .array((0..<int(1...3)).map { _ in node(depth: depth - 1) })
        case 7...13 where depth > 0:
            var keys: [String] = []
            while keys.count < int(1...3) {
                let key =
                    int(0...12) == 0
                    ? pick(["a$b", "c.d", "x[0]"]) : pick(ModelOperationGenerator.ids + ModelOperationGenerator.fields)
                if !keys.contains(key) { keys.append(key) }
            }
            return .object(keys.map { ($0, node(depth: depth - 1)) })
        default:
            var operations = ModelOperationGenerator(seed: UInt64(int(0...1_000_000)))
            return operations.leaf()
        }
    }
}
