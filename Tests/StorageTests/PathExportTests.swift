import Foundation
import Testing
@testable import Storage

/// Every node's path in `tree`, parents first, without priority pseudo-children (a console path cannot name them).
private func paths(in tree: TreeValue, prefix: [String] = []) -> [[String]] {
    guard let children = tree.children else { return [prefix] }
    return [prefix] + children.filter { !$0.key.hasPrefix(".") }.flatMap { paths(in: $0.value, prefix: prefix + [$0.key]) }
}

/// The REST API's shallow=true, on an in-memory tree: a leaf as it is, an object's children as `true` unless
/// they are leaves (whose priorities go).
private func shallow(_ node: TreeValue) -> TreeValue {
    guard let children = node.children else { return node }
    return .object(children.filter { !$0.key.hasPrefix(".") }.mapValues { $0.children == nil ? $0 : $0[FirebaseKey.value] ?? .bool(true) })
}

private func render(_ value: TreeValue?, options: JSONTextWriter.Options = .init()) -> String {
    var writer = JSONTextWriter(options: options)
    if let value { writer.value(value) } else { writer.null() }
    writer.finish()
    return String(decoding: writer.bytes, as: UTF8.self)
}

private func export(_ store: Store, at path: [String], shallow: Bool = false, options: JSONTextWriter.Options = .init())
    throws -> String
{
    var bytes: [UInt8] = []
    try store.exportTree(at: path, options: options, shallow: shallow) { bytes.append(contentsOf: $0) }
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
        try store.exportTree { try gzip.write($0) }
        try gzip.finish()
        var source = try GzipSource(MemorySource(compressed), name: "export.json.gz")
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        var text: [UInt8] = []
        while case let count = try buffer.withUnsafeMutableBytes({ try source.read(into: $0) }), count > 0 {
            text += buffer[..<count]
        }
        #expect(compressed.starts(with: [0x1f, 0x8b]))
        expectSameText(String(decoding: text, as: UTF8.self), try exportJSON(store))
    }
}
