import Foundation
import PostgresTestSupport
import Testing
import TreeTestSupport

@testable import Storage

/// Random sequences of set, update, push, remove and imports of a node (a whole tree's, every other one, over
/// two sessions; and at the end the model's tree, over two sessions), applied to a store and to
/// `RealtimeDatabaseModel`: after every step the export is the model's, byte for byte, with no hidden value; a
/// step the store refuses is one Firebase refuses (or that would empty the whole tree without leave) and
/// changes nothing. `MODEL_SEQUENCES` (default 240) sets how many sequences run, `MODEL_SEED` runs one,
/// `MODEL_TRACE` prints each step to stderr (for a crash, which records no issue).
@Suite("Firebase's semantics against a model")
struct FirebaseSemanticsTests {
    static let shards = 6
    static let sequences = ProcessInfo.processInfo.environment["MODEL_SEQUENCES"].flatMap { Int($0) } ?? 240
    static let steps = 14

    @Test(arguments: 0..<shards)
    func writesAndImportsDoWhatFirebaseDoes(shard: Int) throws {
        let store = try makeStore()
        let seeds: [UInt64] =
            ProcessInfo.processInfo.environment["MODEL_SEED"].flatMap { UInt64($0) }.map { shard == 0 ? [$0] : [] }
            ?? Array(stride(from: UInt64(shard), to: UInt64(Self.sequences), by: Self.shards))
        for seed in seeds {
            if ProcessInfo.processInfo.environment["MODEL_TRACE"] != nil {
                FileHandle.standardError.write(Data("model seed \(seed)\n".utf8))
            }
            var generator = ModelOperationGenerator(seed: seed)
            let operations = (0..<Self.steps).map { _ in generator.operation() }
            guard let failure = try ModelRun.firstFailure(of: operations, on: store) else { continue }
            let shortest = try ModelRun.shrink(operations, failing: failure, on: store)
            Issue.record(
                """
                seed \(seed) (MODEL_SEED=\(seed) repeats it): \(failure.message)
                shortest sequence that fails (\(shortest.operations.count) of \(operations.count) steps):
                \(shortest.operations.map { "  \($0)" }.joined(separator: "\n"))
                \(shortest.failure.message)
                """)
            return
        }
    }
}

/// Runs a sequence of operations on a store emptied first and on a model, step by step.
enum ModelRun {
    struct Failure {
        var step: Int
        var message: String
    }

    /// The first step after which the store and the model disagree; nil when they never do.
    static func firstFailure(of operations: [ModelOperation], on store: Store) throws -> Failure? {
        try importJSON("null", into: store, options: ImportOptions(allowsEmptying: true))
        var model = RealtimeDatabaseModel()
        for (index, operation) in operations.enumerated() {
            // A crash (an assertion in the export) ends the process before any issue is recorded: say the steps.
            if ProcessInfo.processInfo.environment["MODEL_TRACE"] != nil {
                FileHandle.standardError.write(Data("model step \(index + 1): \(operation)\n".utf8))
            }
            if let message = try apply(operation, to: store, model: &model) {
                return Failure(step: index, message: "step \(index + 1), \(operation): \(message)")
            }
        }
        // The tree the sequence made, imported whole over two sessions (each loading the top-level nodes it
        // reaches first), exports as the model does.
        let whole = model.exportText
        guard whole != "null" else { return nil }
        try importJSON(whole, into: store, options: ImportOptions(), jobs: 2)
        let reimported = try exportJSON(store)
        guard reimported.utf8.elementsEqual(whole.utf8) else {
            return Failure(
                step: operations.count - 1,
                message: "the model's tree imported over two sessions:\n  \(reimported)\nmodel:\n  \(whole)")
        }
        return nil
    }

    /// The shortest sequence found by dropping steps one at a time while it still fails.
    static func shrink(_ operations: [ModelOperation], failing failure: Failure, on store: Store) throws -> (
        operations: [ModelOperation], failure: Failure
    ) {
        var current = Array(operations.prefix(failure.step + 1))
        var currentFailure = failure
        var index = current.count - 1
        while index >= 0 {
            var candidate = current
            candidate.remove(at: index)
            if !candidate.isEmpty, let found = try firstFailure(of: candidate, on: store) {
                current = Array(candidate.prefix(found.step + 1))
                currentFailure = found
                index = min(index, current.count) - 1
            } else {
                index -= 1
            }
        }
        return (current, currentFailure)
    }

    /// Applies `operation` to both; what went wrong, or nil.
    static func apply(_ operation: ModelOperation, to store: Store, model: inout RealtimeDatabaseModel) throws
        -> String?
    {
        let before = model
        let exportedBefore = try exportJSON(store)
        var expected = model
        var refusal: String?
        var pushPath: [String]?
        do {
            switch operation {
            case .set(let path, let value), .importAt(let path, let value): try expected.set(value, at: path)
            case .update(let path, let value): try expected.update(value, at: path)
            case .merge(let path, let value):
                // A file's keys are keys, not paths: one with a slash is refused as Firebase refuses the key.
                if case .object(let members) = value, members.contains(where: { $0.0.contains("/") }) {
                    throw RealtimeDatabaseModel.Refusal("a key holds one of . $ # [ ] /")
                }
                try expected.update(value, at: path)
            case .remove(let path): try expected.remove(at: path)
            case .push: break  // its key is known once the store made it
            }
        } catch {
            refusal = "\(error)"
        }
        // Writes must not empty the store without leave; an import --at below the root has it here.
        var empties = expected.root == nil && before.root != nil
        if case .importAt(let path, _) = operation, !path.isEmpty { empties = false }
        if case .merge = operation { empties = false }
        var storeError: (any Error)?
        do {
            switch operation {
            case .set(let path, let value): _ = try store.write(.set(json: value.text), at: path)
            case .update(let path, let value): _ = try store.write(.update(json: value.text), at: path)
            case .remove(let path): _ = try store.write(.remove, at: path)
            case .push(let path, let value): pushPath = try store.write(.push(json: value.text), at: path).path
            case .importAt(let path, let value) where path.isEmpty && value.text.utf8.count % 2 == 1:
                // Every other whole-tree import loads over two sessions.
                try importJSON(value.text, into: store, options: ImportOptions(), jobs: 2)
            case .importAt(let path, let value):
                try importJSON(value.text, into: store, options: ImportOptions(at: path, allowsEmptying: !path.isEmpty))
            case .merge(let path, let value):
                try importJSON(value.text, into: store, options: ImportOptions(mode: .merge, at: path))
            }
        } catch {
            storeError = error
        }
        if case .push(let path, let value) = operation, storeError == nil {
            guard let pushPath, pushPath.count == path.count + 1, Array(pushPath.prefix(path.count)) == path,
                pushPath.last?.utf8.count == 20
            else { return "push reported \(pushPath ?? []) for a new child of \(path)" }
            do { try expected.set(value, at: pushPath) } catch { refusal = "\(error)" }
        } else if case .push(let path, let value) = operation {
            do { try expected.set(value, at: path + ["-NxQ3bH0Jb2Sc5HWq5nR"]) } catch { refusal = "\(error)" }
        }
        let exported = try exportJSON(store)
        if let storeError {
            // The one deliberate difference: the store holds a tree of named nodes, so a leaf at the root (which
            // Firebase takes) is refused, as import refuses a file that is one.
            if case .leaf? = expected.root, refusal == nil { refusal = "a leaf at the root (refused by design)" }
            guard refusal != nil || empties else {
                return "the store refused what Firebase accepts: \(storeError)"
            }
            guard exported.utf8.elementsEqual(exportedBefore.utf8) else {
                return "a refused step changed the store:\nbefore: \(exportedBefore)\nafter:  \(exported)"
            }
            return nil
        }
        if let refusal { return "the store accepted what Firebase refuses (\(refusal)); export \(exported)" }
        if empties { return "the whole tree was emptied without leave" }
        model = expected
        guard exported.utf8.elementsEqual(model.exportText.utf8) else {
            return "export:\n  \(exported)\nmodel:\n  \(model.exportText)"
        }
        let hidden = try hiddenValues(store)
        guard hidden.isEmpty else { return "hidden values: \(hidden)" }
        return nil
    }
}
