import Testing
import TreeTestSupport

@testable import FirebaseTree

/// The comparison's pass over objects that are the same text on both sides (`JSONReader.skipEqualObjects`)
/// changes nothing it finds: the same differences, nodes and errors as reading every token.
@Suite("Passing over equal text (no server)")
struct EqualObjectsTests {
    /// What a comparison found: its differences as lines and the nodes compared, or the error it threw.
    private struct Outcome: Equatable {
        var lines: [String] = []
        var nodes = 0
        var error: String?
    }

    private static func compare(
        _ source: [UInt8], _ store: [UInt8], skipping: Bool, chunks: (Int, Int), bufferSize: Int
    ) -> Outcome {
        var outcome = Outcome()
        var comparison = TreeComparison { difference in
            outcome.lines.append(
                "/\(difference.path.joined(separator: "/")) \(difference.kind.rawValue) \(difference.source ?? "-") "
                    + (difference.store ?? "-"))
        }
        comparison.skipsEqualText = skipping
        var sourceReader = JSONReader(source: MemorySource(source, chunkSize: chunks.0), bufferSize: bufferSize)
        var storeReader = JSONReader(source: MemorySource(store, chunkSize: chunks.1), bufferSize: bufferSize)
        do {
            try comparison.compare(source: &sourceReader, store: &storeReader)
        } catch let error as TreeError {
            outcome.error = "\(error.kind) \(error.message) \(error.position.map(\.description) ?? "")"
        } catch {
            outcome.error = "\(error)"
        }
        outcome.nodes = comparison.nodesCompared
        return outcome
    }

    private static let keys = ["a", "b", "c", "0", "1", "2", "10", "-Kx1", "é", #"q"k"#, #"b\s"#, "zz"]
    private static let strings = [
        "", "x", "tab\t", #"quote""#, #"back\slash"#, "é", "日本語", ".dot", "line\nbreak", "ascii and more text here",
        "\u{1}", "/", "{}[],:",
    ]
    private static let numbers: [Double] = [0, 1, -1, 1.5, 1e21, 1_234_567_890_123, 0.1, -0.000001]

    private static func leaf(_ random: inout SeededGenerator) -> TreeValue {
        switch Int.random(in: 0..<3, using: &random) {
        case 0: .string(strings.randomElement(using: &random) ?? "")
        case 1: .number(numbers.randomElement(using: &random) ?? 0)
        default: .bool(Bool.random(using: &random))
        }
    }

    /// A tree as the store holds it: no empty objects, priorities rare.
    private static func tree(_ random: inout SeededGenerator, depth: Int) -> TreeValue {
        guard depth > 0, Int.random(in: 0..<4, using: &random) > 0 else { return leaf(&random) }
        var children: [TreeKey: TreeValue] = [:]
        for _ in 0..<Int.random(in: 1...4, using: &random) {
            children[TreeKey(keys.randomElement(using: &random) ?? "a")] = tree(&random, depth: depth - 1)
        }
        if Int.random(in: 0..<25, using: &random) == 0 { children[TreeKey(FirebaseKey.priority)] = leaf(&random) }
        return .object(children)
    }

    /// `value` changed somewhere: a leaf changed or removed, a child added, null or an empty object beside it.
    private static func edited(_ value: TreeValue, _ random: inout SeededGenerator) -> TreeValue {
        guard case .object(var children) = value, let key = children.keys.randomElement(using: &random) else {
            return leaf(&random)
        }
        switch Int.random(in: 0..<6, using: &random) {
        case 0: children[key] = nil
        case 1: children[TreeKey(keys.randomElement(using: &random) ?? "a")] = tree(&random, depth: 2)
        case 2: children[TreeKey("zz")] = .object([:])
        default: children[key] = edited(children[key] ?? leaf(&random), &random)
        }
        return .object(children)
    }

    private static func text(_ value: TreeValue, pretty: Bool = false, arrays: Bool = false) -> [UInt8] {
        var writer = JSONTextWriter(
            options: .init(isPretty: pretty, rendersArrays: arrays, keepsPriorities: true))
        writer.value(value)
        writer.finish()
        return writer.bytes
    }

    /// The source's text changed where the tree is not: whitespace at a byte, a number or a letter spelled
    /// otherwise (which may leave it invalid JSON: then both ways must refuse it alike).
    private static func respelled(_ bytes: [UInt8], _ random: inout SeededGenerator) -> [UInt8] {
        guard !bytes.isEmpty else { return bytes }
        var bytes = bytes
        let at = Int.random(in: 0..<bytes.count, using: &random)
        switch Int.random(in: 0..<4, using: &random) {
        case 0: bytes.insert(contentsOf: [0x20, 0x0A], at: at)
        case 1:
            if let digit = bytes[at...].firstIndex(where: { (0x30...0x39).contains($0) }) {
                bytes.insert(contentsOf: Array(".0".utf8), at: digit + 1)
            }
        case 2:
            if let letter = bytes[at...].firstIndex(of: UInt8(ascii: "x")) {
                bytes.replaceSubrange(letter...letter, with: Array(#"\u0078"#.utf8))
            }
        default: bytes.insert(0x09, at: at)
        }
        return bytes
    }

    @Test func findsWhatReadingEveryTokenFinds() {
        var random = SeededGenerator(state: 0x5EED_0B1E)
        for round in 0..<3000 {
            let store = Self.tree(&random, depth: 4)
            let storeText = Self.text(store)
            var source = store
            if Int.random(in: 0..<3, using: &random) == 0 { source = Self.edited(source, &random) }
            var sourceText = Self.text(
                source, pretty: Int.random(in: 0..<3, using: &random) == 0,
                arrays: Int.random(in: 0..<4, using: &random) == 0)
            if Int.random(in: 0..<3, using: &random) == 0 { sourceText = Self.respelled(sourceText, &random) }
            let chunks = (Int.random(in: 1...40, using: &random), Int.random(in: 1...40, using: &random))
            // Small buffers: objects longer than them are read token by token, and read-ahead crosses chunks.
            let bufferSize = [64, 100, 1 << 16].randomElement(using: &random) ?? 64
            let skipping = Self.compare(sourceText, storeText, skipping: true, chunks: chunks, bufferSize: bufferSize)
            let reading = Self.compare(sourceText, storeText, skipping: false, chunks: chunks, bufferSize: bufferSize)
            #expect(
                skipping == reading,
                "round \(round): \(String(decoding: sourceText, as: UTF8.self)) against \(String(decoding: storeText, as: UTF8.self))"
            )
            if skipping != reading { return }
        }
    }

    @Test func passesOverEqualTextWithoutReadingIt() throws {
        // Pretty-printed against compact, escapes and all: the same nodes, no difference.
        let tree = TreeValue.object([
            "u": .object(["name": .string(#"a "quoted" \ name"#), "n": .number(12), "ok": .bool(true)]),
            "v": .object(["w": .object(["x": .string("é")])]),
        ])
        let outcome = Self.compare(
            Self.text(tree, pretty: true), Self.text(tree), skipping: true, chunks: (7, 5), bufferSize: 64)
        #expect(outcome == Outcome(lines: [], nodes: 8, error: nil))
        // The readers themselves: equal objects passed over, the next token read after them on both sides.
        var first = JSONReader(source: MemorySource(#"{"a": {"b": "x\"y", "c": 1 } , "z": 2}"#), bufferSize: 64)
        var second = JSONReader(source: MemorySource(#"{"a":{"b":"x\"y","c":1},"z":3}"#, chunkSize: 3))
        try first.next()
        try second.next()
        _ = try first.nextChild()
        _ = try second.nextChild()
        #expect(try JSONReader.skipEqualObjects(&first, &second) == 3)
        #expect(try first.nextChild() == "z" && second.nextChild() == "z")
        // Parted ones are left as they were: the reader goes on from the object's first token.
        var left = JSONReader(source: MemorySource(#"{"a":{"b":1,"c":1}}"#))
        var right = JSONReader(source: MemorySource(#"{"a":{"b":1,"c":2}}"#))
        try left.next()
        try right.next()
        _ = try left.nextChild()
        _ = try right.nextChild()
        #expect(try JSONReader.skipEqualObjects(&left, &right) == nil)
        #expect(try left.nextChild() == "b" && right.nextChild() == "b")
        // Whitespace inside a number is no whitespace between tokens.
        let split = Self.compare(
            Array(#"{"u":{"n":1 2}}"#.utf8), Array(#"{"u":{"n":12}}"#.utf8), skipping: true, chunks: (100, 100),
            bufferSize: 64)
        #expect(split.error?.hasPrefix("malformedInput") == true)
    }
}
