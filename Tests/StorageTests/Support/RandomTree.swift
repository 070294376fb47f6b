import Foundation
import PostgresTestSupport
import TreeTestSupport

@testable import Storage

/// Random Firebase trees for property tests, and the JSON a tool might have written them as: arrays for
/// integer-keyed objects, nulls and empty objects that must vanish, priorities, odd spacing, keys out of order
/// or written twice.
struct RandomTree {
    var generator: SeededGenerator
    /// How many objects `json` is writing inside.
    private var nesting = 0

    init(seed: Int) {
        generator = SeededGenerator(state: UInt64(seed) &* 0x5851_F42D_4C95_7F2D &+ 1)
    }

    private mutating func int(_ range: ClosedRange<Int>) -> Int { Int.random(in: range, using: &generator) }
    private mutating func chance(_ percent: Int) -> Bool { int(1...100) <= percent }
    private mutating func pick<T>(_ choices: [T]) -> T { choices[int(0...choices.count - 1)] }

    static let pushAlphabet = Array("-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz")

    mutating func key() -> String {
        switch int(0...9) {
        case 0: return String(int(0...12))
        case 1: return pick(["-5", "007", "-0", "2147483648", "05781774870892877580", "1e3"])
        case 2: return String((0..<20).map { _ in pick(Self.pushAlphabet) })
        case 3: return pick(["Москва", "東京", "😀cat", "\u{E000}x", "\u{FFFD}", "𝄞", "é", "e\u{301}", "a b", "x-y_z!%@"])
        case 4: return "uid_" + String(int(0...99))
        default: return String((0..<int(1...8)).map { _ in pick(Array("abcdefgxyzAZ_-09")) })
        }
    }

    mutating func leaf() -> TreeValue {
        switch int(0...9) {
        case 0: return .bool(chance(50))
        case 1:
            return .number(
                pick([
                    0, -1, 4, 1e21, 5e-7, Double("5e-324")!, 374.9999999999999, 1497918951.91262, -2.5e-300,
                    Double("9007199254740993")!, 1.7976931348623157e308, 0.1,
                ]))
        case 2: return .number(Double(int(-1000...1_000_000)))
        case 3:
            return .string(
                pick([
                    "", " ", "a\"b\\c", "line\nbreak\ttab\u{1}", "\u{2028}\u{FEFF}", "Zoë 🐈 中文",
                    String(repeating: "x", count: 3000),
                ]))
        default: return .string(String((0..<int(0...12)).map { _ in pick(Array("abc xyz-é😀")) }))
        }
    }

    /// A normalized tree: no empty objects, priorities only where Firebase allows them.
    mutating func tree(depth: Int, maximumDepth: Int) -> TreeValue {
        if depth >= maximumDepth || (depth > 1 && chance(35)) {
            let value = leaf()
            if chance(5) {
                return .object([TreeKey(FirebaseKey.value): value, TreeKey(FirebaseKey.priority): priority()])
            }
            return value
        }
        var children: [TreeKey: TreeValue] = [:]
        if chance(15) {
            // An array-like object, dense or with holes.
            for index in 0..<int(1...6) where chance(80) {
                children[String(index)] = tree(depth: depth + 1, maximumDepth: maximumDepth)
            }
        }
        for _ in 0..<int(1...5) {
            children[key()] = tree(depth: depth + 1, maximumDepth: maximumDepth)
        }
        if chance(8) { children[FirebaseKey.priority] = priority() }
        return .object(children)
    }

    private mutating func priority() -> TreeValue {
        chance(50) ? .string(key()) : .number(Double(int(-5...100)))
    }

    /// A whole database: the app's top-level nodes with shapes both right and wrong, and unknown nodes.
    mutating func database() -> TreeValue {
        var root: [TreeKey: TreeValue] = [:]
        let roots = ["users", "posts", "postLikes", "followers", "following", "timeline", "chats", "messages"]
        for name in roots where chance(70) {
            root[name] = appNode(name)
        }
        for _ in 0..<int(0...3) { root[key()] = tree(depth: 1, maximumDepth: 5) }
        if chance(20) { root["deep"] = deepChain(levels: 31) }
        if root.isEmpty { root["only"] = .bool(true) }
        return .object(root)
    }

    private mutating func deepChain(levels: Int) -> TreeValue {
        var value = leaf()
        for _ in 0..<levels { value = .object([TreeKey(key()): value]) }
        return value
    }

    private mutating func uid() -> String { "uid_" + String(int(0...30)) }
    private mutating func pushID() -> String { "-K" + String((0..<18).map { _ in pick(Self.pushAlphabet) }) }

    /// A top-level node of the app: mostly well-formed records, some with unknown or mistyped fields, some
    /// not shaped at all.
    private mutating func appNode(_ name: String) -> TreeValue {
        var node: [TreeKey: TreeValue] = [:]
        for _ in 0..<int(1...6) {
            let first = chance(90) ? uid() : key()
            switch (name, int(0...9)) {
            case (_, 0):
                node[first] = tree(depth: 2, maximumDepth: 5)
            case ("users", _):
                node[first] = record(["username": .string("name " + key())])
            case ("posts", let shape) where shape < 3:
                node[pushID()] = record([
                    "imageFileURL": .string("https://x/" + key()), "user": .string(key()),
                    "votes": .number(Double(int(0...50))), "timestamp": .number(1.5e12 + Double(int(0...1000))),
                ])
            case ("posts", _):
                var posts: [TreeKey: TreeValue] = [:]
                for _ in 0..<int(1...3) {
                    posts[pushID()] = record([
                        "image_url": .string("https://x/" + key()), "image_height": .number(374.9999999999999),
                        "created_at": .number(1497918951.91262), "like_count": .number(Double(int(0...3))),
                        "poster": .object(["uid": .string(first), "username": .string(key())]),
                    ])
                }
                node[first] = .object(posts)
            case ("postLikes", _), ("followers", _), ("following", _):
                var edges: [TreeKey: TreeValue] = [:]
                for _ in 0..<int(1...4) { edges[uid()] = chance(90) ? .bool(true) : leaf() }
                node[name == "postLikes" ? pushID() : first] = .object(edges)
            default:
                var records: [TreeKey: TreeValue] = [:]
                for _ in 0..<int(1...3) {
                    let fields: [TreeKey: TreeValue]
                    switch name {
                    case "timeline": fields = ["poster_uid": .string(uid())]
                    case "chats":
                        fields = [
                            "title": .string(key()), "memberHash": .string(String(int(-99999...99999))),
                            "members": .object(
                                [TreeKey(first): .bool(true)].merging([
                                    TreeKey(uid()): chance(90) ? .bool(true) : leaf()
                                ]) { $1 }),
                            "lastMessage": .string("a: b"), "lastMessageSent": .number(1497918951.5),
                        ]
                    default:
                        fields = [
                            "content": .string(key()), "timestamp": .number(1497918951.25),
                            "sender": .object(["uid": .string(uid()), "username": .string(key())]),
                        ]
                    }
                    records[pushID()] = record(fields)
                }
                node[first] = .object(records)
            }
        }
        return .object(node)
    }

    /// A record with its fields, sometimes with a field missing, mistyped, unknown, or a priority.
    private mutating func record(_ fields: [TreeKey: TreeValue]) -> TreeValue {
        var fields = fields
        if chance(15), let key = fields.keys.sorted().first { fields[key] = nil }
        if chance(15), let key = fields.keys.sorted().last {
            fields[key] = chance(50) ? leaf() : tree(depth: 4, maximumDepth: 6)
        }
        if chance(15) { fields["extra_" + key()] = tree(depth: 4, maximumDepth: 6) }
        if chance(5) { fields[FirebaseKey.priority] = priority() }
        if fields.isEmpty || (fields.count == 1 && fields[FirebaseKey.priority] != nil) { fields["x"] = .bool(true) }
        return .object(fields)
    }

    // MARK: Writing it as JSON, the way various tools would

    /// JSON text for `value`, with arrays, nulls, empty objects, random key order and spacing.
    mutating func json(_ value: TreeValue) -> String {
        var out = ""
        write(value, to: &out)
        return out
    }

    private mutating func space() -> String { chance(30) ? pick([" ", "\n", "  ", "\t", "\r\n"]) : "" }

    private mutating func write(_ value: TreeValue, to out: inout String) {
        switch value {
        case .string(let text): out += quoted(text)
        case .number(let number): out += chance(50) ? JavaScriptNumber.format(number) : "\(number)"
        case .bool(let flag): out += flag ? "true" : "false"
        case .object(let children):
            let indices = children.keys.compactMap { FirebaseKey.arrayIndex($0.string) }
            if indices.count == children.count, indices.max()! < 2 * children.count + 8, chance(70) {
                let elements = (0...indices.max()!).map { children[String($0)] }
                out += "[" + space()
                for (position, element) in elements.enumerated() {
                    if position > 0 { out += "," + space() }
                    if let element { write(element, to: &out) } else { out += "null" }
                }
                if chance(20) { out += ",null" }
                out += space() + "]"
                return
            }
            nesting += 1
            defer { nesting -= 1 }
            var keys = children.keys.map(\.string).sorted(by: FirebaseKey.exportPrecedes)
            if chance(30) { keys.shuffle(using: &generator) }
            out += "{" + space()
            var first = true
            func separator() { if !first { out += "," + space() }; first = false }
            for key in keys {
                if chance(2), !key.hasPrefix(".") {
                    // A key written twice: the last occurrence wins, so the first may hold anything (within
                    // Firebase's depth, which a deep chain nearly fills).
                    separator()
                    out += quoted(key) + ":"
                    write(nesting > 20 || chance(50) ? leaf() : tree(depth: 3, maximumDepth: 5), to: &out)
                }
                separator()
                out += quoted(key) + space() + ":" + space()
                write(children[key]!, to: &out)
                if chance(3), !key.hasPrefix(".") {
                    separator()
                    out += quoted("vanishing_" + key) + ":" + pick(["null", "{}", "[]", #"{"a":null}"#, "[null]"])
                }
            }
            out += space() + "}"
        }
    }

    private mutating func quoted(_ text: String) -> String {
        var result = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += chance(50) ? "\\n" : "\\u000a"
            case "\t": result += "\\t"
            case "\r": result += "\\r"
            case _ where scalar.value < 0x20: result += String(format: "\\u%04X", scalar.value)
            case _ where scalar.value > 0xFFFF && chance(30):
                let v = scalar.value - 0x10000
                result += String(format: "\\u%04x\\u%04x", 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF))
            case _ where scalar.value > 0x7F && scalar.value <= 0xFFFF && chance(20):
                result += String(format: "\\u%04x", scalar.value)
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result + "\""
    }
}
