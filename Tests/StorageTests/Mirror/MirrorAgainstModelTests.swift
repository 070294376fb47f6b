import Foundation
import Testing
import TreeTestSupport

@testable import Storage

/// Random change feeds, as Firebase's REST streaming sends them (a first put of the whole tree, then puts and
/// patches at random paths, the root included), applied by `Store.mirror` and by the Realtime Database model:
/// after every transaction the store exports what the model holds after the same events.
struct MirrorAgainstModelTests {
    static let shards = 4
    static let streams = ProcessInfo.processInfo.environment["MIRROR_STREAMS"].flatMap { Int($0) } ?? 48

    /// A feed of `steps` events after a first put, and the model's export after each event (index 0: after
    /// the first put).
    static func feed(seed: UInt64, steps: Int) -> (text: String, exports: [String]) {
        var generator = ModelOperationGenerator(seed: seed)
        var model = RealtimeDatabaseModel()
        for _ in 0..<6 {
            let path = generator.path()
            var next = model
            guard (try? next.set(generator.value(at: path), at: path)) != nil, !next.hasLeafRoot else { continue }
            model = next
        }
        var text = event("put", path: [], data: model.exportText)
        var exports = [model.exportText]
        while exports.count <= steps {
            let operation = generator.operation()
            var next = model
            let line: String
            do {
                switch operation {
                case .set(let path, let value), .importAt(let path, let value):
                    try next.set(value, at: path)
                    line = event("put", path: path, data: value.text)
                case .update(let path, let value):
                    guard case .object = value else { continue }
                    try next.update(value, at: path)
                    line = event("patch", path: path, data: value.text)
                case .remove(let path):
                    try next.remove(at: path)
                    line = event("put", path: path, data: "null")
                case .push, .merge:
                    continue
                }
            } catch {
                // Firebase refuses it: no event is sent.
                continue
            }
            // A database whose root is a value is no tree the store keeps (import refuses it too).
            if next.hasLeafRoot { continue }
            model = next
            text += (generator.chance(10) ? "event: keep-alive\ndata: null\n\n" : "") + line
            exports.append(model.exportText)
        }
        return (text, exports)
    }

    static func event(_ name: String, path: [String], data: String) -> String {
        let path = "/" + path.joined(separator: "/")
        return "event: \(name)\ndata: {\"path\": \(RealtimeDatabaseModel.Leaf.quoted(path)), \"data\": \(data)}\n\n"
    }

    @Test(arguments: 0..<shards)
    func eachTransactionLeavesWhatTheModelHolds(shard: Int) throws {
        let store = try makeStore()
        for seed in stride(from: UInt64(shard), to: UInt64(Self.streams), by: Self.shards) {
            try importJSON("null", into: store, options: ImportOptions(allowsEmptying: true))
            let (text, exports) = Self.feed(seed: seed, steps: 12)
            var reader = EventStreamReader(source: MemorySource(text, chunkSize: 97))
            var failures = 0
            let report = try store.mirror(
                &reader, options: MirrorOptions(batchEvents: [1, 3, 1000][Int(seed % 3)], allowsEmptying: true),
                onCommit: { progress in
                    let exported = try exportJSON(store)
                    let expected = exports[progress.eventsApplied - 1]
                    if !exported.utf8.elementsEqual(expected.utf8), failures == 0 {
                        failures += 1
                        Issue.record(
                            "seed \(seed), after \(progress.eventsApplied) events:\n  \(exported)\nmodel:\n  \(expected)"
                        )
                    }
                })
            #expect(report.end == .endOfStream)
            #expect(report.progress.eventsApplied == exports.count, "seed \(seed)")
            if failures > 0 { return }
        }
    }

    /// A connection cut anywhere, then a new one whose first put is the tree as it is now: the store ends equal,
    /// whatever the cut left.
    @Test func aCutStreamThenANewConnectionConverges() throws {
        let store = try makeStore()
        var random = SeededGenerator(state: 99)
        for seed in 0..<UInt64(12) {
            try importJSON("null", into: store, options: ImportOptions(allowsEmptying: true))
            let (text, exports) = Self.feed(seed: 1_000 + seed, steps: 10)
            let bytes = Array(text.utf8)
            let cut = Int.random(in: 0...bytes.count, using: &random)
            var first = EventStreamReader(source: MemorySource(Array(bytes[..<cut]), chunkSize: 61))
            _ = try store.mirror(&first, options: MirrorOptions(allowsEmptying: true))
            let final = try #require(exports.last)
            var second = EventStreamReader(source: MemorySource(Self.event("put", path: [], data: final)))
            let report = try store.mirror(&second, options: MirrorOptions(allowsEmptying: true))
            #expect(report.progress.firstPut != nil)
            expectSameText(try exportJSON(store), final)
        }
    }

    @Test func cancelAndAuthRevokedEndTheMirrorAfterWhatCameBefore() throws {
        let store = try makeStore()
        let put = Self.event("put", path: [], data: #"{"users": {"u1": {"username": "ana"}}}"#)
        var cancelled = EventStreamReader(
            source: MemorySource(
                put + Self.event("patch", path: ["users", "u1"], data: #"{"username": "bo"}"#)
                    + "event: cancel\ndata: Permission denied\n\n" + put))
        let report = try store.mirror(&cancelled)
        #expect(report.end == .cancelled("Permission denied") && report.progress.eventsApplied == 2)
        expectSameText(try exportJSON(store), #"{"users":{"u1":{"username":"bo"}}}"#)
        var revoked = EventStreamReader(
            source: MemorySource("event: auth_revoked\ndata: credential is no longer valid\n\n"))
        #expect(try store.mirror(&revoked).end == .authRevoked)
    }

    @Test func aMalformedEventStopsTheMirrorAfterTheLastWholeOne() throws {
        let store = try makeStore()
        let stream =
            Self.event("put", path: [], data: #"{"users": {"u1": {"username": "ana"}}}"#)
            + Self.event("put", path: ["users", "u2"], data: #"{"username": "bo"}"#)
            + "event: patch\ndata: {\"path\": \"/users\", \"data\": {\"u3\": \n\n"
            + Self.event("put", path: ["users", "u4"], data: #"{"username": "cy"}"#)
        var reader = EventStreamReader(source: MemorySource(stream))
        let error = #expect(throws: StorageError.self) { try store.mirror(&reader) }
        #expect(error?.message.hasPrefix("line 7: ") == true, "\(String(describing: error))")
        expectSameText(try exportJSON(store), #"{"users":{"u1":{"username":"ana"},"u2":{"username":"bo"}}}"#)
        // A key Firebase refuses, in a later event.
        var refused = EventStreamReader(
            source: MemorySource(Self.event("put", path: ["users", "u5"], data: #"{"a.b": 1}"#)))
        #expect(throws: StorageError.self) { try store.mirror(&refused) }
    }

    /// A transaction's events are written folded; one the store refuses (here: emptying it) stops the mirror
    /// with its line, and the events before it in the same transaction are kept.
    @Test func aRefusedEventInAFoldedTransactionKeepsTheOnesBeforeIt() throws {
        let store = try makeStore()
        let stream =
            Self.event("put", path: [], data: #"{"users": {"u1": {"username": "ana"}}}"#)
            + Self.event("patch", path: ["users"], data: #"{"u2/username": "bo", "u1/bio": "hi"}"#)
            + Self.event("put", path: ["users", "u2"], data: "null")
            + Self.event("put", path: [], data: "null")
            + Self.event("put", path: ["users", "u3"], data: #"{"username": "cy"}"#)
        var reader = EventStreamReader(source: MemorySource(stream))
        var transactions: [Int] = []
        let error = #expect(throws: StorageError.self) {
            try store.mirror(
                &reader, options: MirrorOptions(batchEvents: 1000), onCommit: { transactions.append($0.eventsApplied) })
        }
        #expect(
            error?.message.hasPrefix("line 10: this write would delete everything") == true,
            "\(String(describing: error))")
        #expect(transactions == [1, 3])
        expectSameText(try exportJSON(store), #"{"users":{"u1":{"bio":"hi","username":"ana"}}}"#)
    }

    @Test func aFirstPutLargerThanMemoryStreamsThroughTheSync() throws {
        let store = try makeStore()
        let users = (0..<70_000).map { #""u\#($0)": {"username": "user number \#($0) with a long name"}"# }
        let tree = "{\"users\": {" + users.joined(separator: ", ") + "}}"
        #expect(tree.utf8.count > EventData.memoryLimit)
        var reader = EventStreamReader(
            source: MemorySource(
                Self.event("put", path: [], data: tree) + Self.event("put", path: ["users", "u1"], data: "null")))
        let report = try store.mirror(&reader)
        #expect(report.progress.eventsApplied == 2)
        let last = try exportJSON(store, at: ["users", "u69999"])
        #expect(last == #"{"username":"user number 69999 with a long name"}"#)
        #expect(try exportJSON(store, at: ["users", "u1"]) == "null")
    }
}

extension RealtimeDatabaseModel {
    /// Whether the whole database is one value rather than a tree.
    var hasLeafRoot: Bool {
        if case .leaf = root { return true }
        return false
    }
}
