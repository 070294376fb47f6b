import Foundation
import PostgresTestSupport
import Testing
import TreeTestSupport

@testable import Storage

/// Random files imported, the store then changed by random writes, then synced with a newer file: either a random
/// file of its own or the first one edited by the model's writes. Afterwards the export equals the model of what
/// import keeps of the newer file and an import of it into another store, `check` finds there what it finds after
/// that import, and a second sync of the same file writes nothing.
@Suite("sync against the model")
struct SyncAgainstModelTests {
    static let files = ProcessInfo.processInfo.environment["MODEL_SEQUENCES"].flatMap { Int($0) }.map { $0 / 4 } ?? 48

    @Test(arguments: 0..<4)
    func syncMakesWhatImportMakes(shard: Int) throws {
        let store = try makeStore()
        let reference = try makeStore()
        let lenient = ImportOptions(maximumRejects: 1000, allowsEmptying: true)
        let syncing = SyncOptions(maximumRejects: 1000, allowsEmptying: true)
        for seed in stride(from: UInt64(shard), to: UInt64(Self.files), by: 4) {
            var files = RandomFile(seed: seed)
            let first = files.document()
            try importJSON(first.text, into: store, options: lenient)
            var (kept, _) = RealtimeDatabaseModel.nodeDroppingRejects(from: first, at: [])
            if case .leaf? = kept { kept = nil }
            var steps: [String] = []
            var writes = ModelOperationGenerator(seed: seed &+ 2000)
            for _ in 0..<files.int(0...3) {
                // The app writes to the store meanwhile.
                guard case .set(let path, let value) = writes.operation(), !path.isEmpty else { continue }
                if (try? store.write(.set(json: value.text), at: path, allowsEmptying: true)) != nil {
                    steps.append("set /\(path.joined(separator: "/")) \(value.text)")
                }
            }
            let newer: String
            let expected: String
            if seed % 2 == 0 {
                let document = files.document()
                newer = document.text
                var (node, _) = RealtimeDatabaseModel.nodeDroppingRejects(from: document, at: [])
                if case .leaf? = node { node = nil }
                expected = RealtimeDatabaseModel.render(node)
            } else {
                // The first file edited, as a later export of the same database would be.
                var model = RealtimeDatabaseModel(root: kept)
                var edits = ModelOperationGenerator(seed: seed &+ 3000)
                for _ in 0..<files.int(1...6) {
                    switch edits.operation() {
                    case .set(let path, let value), .importAt(let path, let value): try? model.set(value, at: path)
                    case .update(let path, let value), .merge(let path, let value): try? model.update(value, at: path)
                    case .remove(let path): try? model.remove(at: path)
                    case .push(let path, let value): try? model.set(value, at: path + ["-push\(seed)"])
                    }
                }
                newer = model.exportText
                // A leaf at the root is refused: import keeps nothing of it.
                expected = model.root.map { if case .leaf = $0 { "null" } else { newer } } ?? newer
            }
            let context = "seed \(seed)\nfirst: \(first.text)\nthen: \(steps)\nnewer: \(newer)"
            // verify and a dry run count in the same units: the same differences of each kind, the same nodes.
            let verified = try store.verify(opening: { MemorySource(newer) })
            var dryRun = syncing
            dryRun.isDryRun = true
            let planned = try store.sync(opening: { MemorySource(newer) }, options: dryRun)
            #expect(
                planned.counts.filter { $0.value > 0 } == verified.counts.filter { $0.value > 0 }
                    && planned.nodesCompared == verified.nodesCompared,
                "\(context)\nverify: \(verified.counts) \(verified.nodesCompared)\nsync: \(planned.counts) \(planned.nodesCompared)"
            )
            // --only and --exclude of the same nodes split the comparison in two: their differences add up to the
            // whole's, and their nodes too (the root counted by each); unless one side holds nothing at all, which
            // the whole tree's comparison reports as one difference at the root and a selection by child.
            let picked: Set<String> = ["following", "posts", "users"]
            let only = try store.verify(
                opening: { MemorySource(newer) },
                options: VerifyOptions(topLevel: TopLevelSelection(only: picked, excluded: [])))
            let rest = try store.verify(
                opening: { MemorySource(newer) },
                options: VerifyOptions(topLevel: TopLevelSelection(only: nil, excluded: picked)))
            #expect(
                verified.differences.contains { $0.path.isEmpty }
                    || (only.differenceCount + rest.differenceCount == verified.differenceCount
                        && only.nodesCompared + rest.nodesCompared == verified.nodesCompared + 1),
                "\(context)\nonly: \(only.counts) \(only.nodesCompared)\nrest: \(rest.counts) \(rest.nodesCompared)")
            #expect(only.differences.allSatisfy { picked.contains($0.path.first ?? "") }, "\(context)")
            let report = try store.sync(opening: { MemorySource(newer) }, options: syncing)
            try importJSON(newer, into: reference, options: lenient)
            let synced = try exportJSON(store)
            let imported = try exportJSON(reference)
            guard synced.utf8.elementsEqual(imported.utf8), synced.utf8.elementsEqual(expected.utf8) else {
                let made = "sync made:   \(synced)\nimport made: \(imported)\nthe model:   \(expected)"
                Issue.record(Comment(rawValue: "\(context)\n\(made)\n\(report.differences)"))
                return
            }
            // The same tree in the same tables (a child of /posts is stored as its children say, whatever their
            // order), so that check sees the same after either.
            #expect(try PostsShapeTests.rows(store) == PostsShapeTests.rows(reference), "\(context)")
            try expectSameChecks(store, reference, context)
            let again = try store.sync(opening: { MemorySource(newer) }, options: syncing)
            #expect(again.rewrites == 0 && again.rowsWritten == 0 && again.rowsDeleted == 0, "\(context)")
            #expect(again.counts.keys.allSatisfy { $0 == .rejected }, "\(context)")
        }
    }

    /// A sync of one node (`--path`) writes what an import of the same file at that path writes: at a record, a
    /// leaf, a node inside a record (`/posts/UID/KEY/poster`), a node the store lacks, the root's children; the
    /// file's keys in any order (sorted first where they are not in RTDB order). A file of nothing is refused
    /// without leave to empty the node.
    @Test(arguments: 0..<2)
    func syncAtAPathWritesWhatImportAtWrites(shard: Int) throws {
        let lenient = ImportOptions(maximumRejects: 1000, allowsEmptying: true)
        for seed in stride(from: UInt64(shard), to: UInt64(Self.files / 2), by: 2) {
            var files = RandomFile(seed: seed &+ 500)
            let first = files.document()
            var (firstNode, _) = RealtimeDatabaseModel.nodeDroppingRejects(from: first, at: [])
            if case .leaf? = firstNode { firstNode = nil }
            let (secondNode, _) = RealtimeDatabaseModel.nodeDroppingRejects(from: files.document(), at: [])
            var random = SeededGenerator(state: seed &+ 900)
            // Paths the store has (down to four levels), and a few it does not.
            var paths: [[String]] = [["nowhere"], ["posts", "u1", "-NxQ3bH0Jb2Sc5HWq5nQ", "poster"], ["users", "u9"]]
            if let exported = try TreeValue.parse(json: RealtimeDatabaseModel.render(firstNode)) {
                var pending: [(path: [String], value: TreeValue)] = [([], exported)]
                while let (path, value) = pending.popLast() {
                    if !path.isEmpty { paths.append(path) }
                    guard path.count < 4, let children = value.children else { continue }
                    for (key, child) in children where key.string != ".priority" {
                        pending.append((path + [key.string], child))
                    }
                }
            }
            for path in paths.shuffled(using: &random).prefix(4) {
                let store = try makeStore(), reference = try makeStore()
                try importJSON(RealtimeDatabaseModel.render(firstNode), into: store, options: lenient)
                try importJSON(RealtimeDatabaseModel.render(firstNode), into: reference, options: lenient)
                let text = RealtimeDatabaseModel(root: secondNode).exportText(at: path)
                let json = try TreeValue.parse(json: text).map { PostsShapeTests.shuffledJSON($0, &random) } ?? text
                let context =
                    "seed \(seed), /\(path.joined(separator: "/")): \(json)\nfirst: \(RealtimeDatabaseModel.render(firstNode))"
                var atPath = lenient
                atPath.at = path
                try importJSON(json, into: reference, options: atPath)
                let syncing = SyncOptions(at: path, maximumRejects: 1000, allowsEmptying: true)
                _ = try store.sync(opening: { MemorySource(json) }, options: syncing)
                expectSameText(try exportJSON(store), try exportJSON(reference))
                #expect(try PostsShapeTests.rows(store) == PostsShapeTests.rows(reference), "\(context)")
                let again = try store.sync(opening: { MemorySource(json) }, options: syncing)
                #expect(again.rewrites == 0 && again.rowsWritten == 0, "\(context)")
            }
        }
    }

    /// The two defects of `--path` seen on a real store: a node inside a record failed with a duplicate key
    /// (blamed on another session), and a file of nothing emptied the node without leave.
    @Test func aPathInsideARecordIsWrittenAsImportWritesItAndNothingIsRefused() throws {
        let store = try makeStore()
        let tree =
            #"{"h4cfg":{"a":1},"posts":{"U":{"K":{"image_url":"a","poster":{"uid":"U","username":"x"}}}},"users":{"u1":{"username":"a"}}}"#
        try importJSON(tree, into: store)
        let poster = #"{"username":"NEW","uid":"U"}"#
        let report = try store.sync(
            opening: { MemorySource(poster) }, options: SyncOptions(at: ["posts", "U", "K", "poster"]))
        #expect(report.rowsWritten == 1 && report.rowsDeleted == 1)
        expectSameText(
            try exportJSON(store),
            #"{"h4cfg":{"a":1},"posts":{"U":{"K":{"image_url":"a","poster":{"uid":"U","username":"NEW"}}}},"users":{"u1":{"username":"a"}}}"#
        )
        _ = try store.sync(
            opening: { MemorySource(#""ana""#) }, options: SyncOptions(at: ["posts", "U", "K", "poster", "username"]))
        #expect(try exportJSON(store, at: ["posts", "U", "K", "poster", "username"]) == #""ana""#)
        for (file, path) in [("null", ["h4cfg"]), ("{}", ["users"]), (#"{"x":null}"#, ["posts", "U", "K", "poster"])] {
            let before = try exportJSON(store)
            let error = #expect(throws: StorageError.self) {
                try store.sync(opening: { MemorySource(file) }, options: SyncOptions(at: path))
            }
            #expect(error?.message.contains("would delete everything there") == true, "\(String(describing: error))")
            #expect(error?.message.contains("another session") == false)
            expectSameText(try exportJSON(store), before)
        }
        _ = try store.sync(opening: { MemorySource("{}") }, options: SyncOptions(at: ["users"], allowsEmptying: true))
        #expect(try exportJSON(store, at: ["users"]) == "null")
    }

    private func expectSameChecks(_ store: Store, _ reference: Store, _ context: String) throws {
        let checked = try store.check(examples: 3).map { "\($0.check.rawValue) \($0.violations) \($0.examples)" }
        let checkedAfterImport = try reference.check(examples: 3).map {
            "\($0.check.rawValue) \($0.violations) \($0.examples)"
        }
        #expect(checked == checkedAfterImport, "\(context)")
    }
}
