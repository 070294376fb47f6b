import Foundation
import TreeTestSupport

@testable import Storage

/// One step of a random sequence: a write verb, or an import of a node.
enum ModelOperation: CustomStringConvertible {
    case set([String], JSONValue)
    case update([String], JSONValue)
    case push([String], JSONValue)
    case remove([String])
    /// `import --at PATH` (the file replaces the node).
    case importAt([String], JSONValue)
    /// `import --at PATH --mode merge` (each top-level child of the file replaces the node's child).
    case merge([String], JSONValue)

    var description: String {
        switch self {
        case .set(let path, let value): "set \(Self.string(path)) '\(value.text)'"
        case .update(let path, let value): "update \(Self.string(path)) '\(value.text)'"
        case .push(let path, let value): "push \(Self.string(path)) '\(value.text)'"
        case .remove(let path): "remove \(Self.string(path))"
        case .importAt(let path, let value): "import --at \(Self.string(path)) '\(value.text)'"
        case .merge(let path, let value): "import --mode merge --at \(Self.string(path)) '\(value.text)'"
        }
    }

    static func string(_ path: [String]) -> String { "/" + path.joined(separator: "/") }
}

/// Random operations at paths where the app's tree keeps typed records (users, posts of both apps, likes,
/// follows, timelines, chats, messages), inside those records, at unmapped nodes and at the root; with values
/// shaped like the records, odd ones, and ones Firebase refuses.
struct ModelOperationGenerator {
    var random: SeededGenerator

    init(seed: UInt64) { random = SeededGenerator(state: seed &* 0x9E37_79B9_7F4A_7C15 &+ 7) }

    static let roots = ["users", "posts", "postLikes", "followers", "following", "timeline", "chats", "messages", "q"]
    static let ids = ["u1", "u2", "7", "0", "-NxQ3bH0Jb2Sc5HWq5nQ"]
    static let fields = [
        "username", "image_url", "image_height", "created_at", "like_count", "poster", "uid", "title", "memberHash",
        "members", "lastMessage", "lastMessageSent", "content", "timestamp", "sender", "imageFileURL", "user",
        "votes", "poster_uid", "x", "1",
    ]

    mutating func int(_ range: ClosedRange<Int>) -> Int { Int.random(in: range, using: &random) }
    mutating func chance(_ percent: Int) -> Bool { int(1...100) <= percent }
    mutating func pick<T>(_ choices: [T]) -> T { choices[int(0...choices.count - 1)] }

    mutating func operation() -> ModelOperation {
        let path = self.path()
        switch int(1...100) {
        case 1...35: return .set(path, value(at: path))
        case 36...55: return .update(path, update(at: path))
        case 56...63: return .push(path, value(at: path + ["-push"]))
        case 64...78: return .remove(path)
        case 79...90: return .importAt(path, value(at: path))
        default: return .merge(path, update(at: path, singleKeys: true))
        }
    }

    mutating func path() -> [String] {
        if chance(4) { return [] }
        var path = [pick(Self.roots)]
        let depth = pick([1, 1, 2, 2, 2, 3, 3, 4])
        while path.count < depth + 1 {
            path.append(path.count <= 2 ? pick(Self.ids) : pick(Self.fields + Self.ids))
        }
        return Array(path.prefix(int(1...depth + 1)))
    }

    mutating func leaf() -> JSONValue {
        switch int(0...5) {
        case 0: return .bool(chance(50))
        case 1, 2: return .number(pick(["0", "-1", "3.5", "1e21", "1700000000000", "2.5e-7", "320", "-0"]))
        default: return .string(pick(["alice", "", "é", "a\"b", "x/y", "u1", "bob: hi"]))
        }
    }

    /// A value to write at `path`: often the record the app keeps there.
    mutating func value(at path: [String]) -> JSONValue {
        switch int(1...100) {
        case 1...8: return .null
        case 9...11: return .object([])
        case 12...13: return .object([("a$b", leaf())])
        case 14...15: return .object([("n", .number("1e400"))])
        case 16...17: return .object([(".value", leaf()), (".priority", .string("p"))])
        case 18...19: return .object([(".priority", .number("3")), ("x", leaf())])
        case 20...24: return .array((0..<int(1...3)).map { _ in chance(20) ? .null : leaf() })
        case 25...44: return leaf()
        case 45...75: return record(at: path) ?? object(depth: 2)
        default: return object(depth: 2)
        }
    }

    /// What the app stores at `path`, with now and then a field of another type or an unknown one.
    mutating func record(at path: [String]) -> JSONValue? {
        guard let root = path.first else { return nil }
        var members: [(String, JSONValue)]
        switch (root, path.count) {
        case ("users", 2): members = [("username", .string(pick(["alice", "bob"])))]
        case ("posts", 3):
            members = [
                ("image_url", .string("https://x/1.jpg")), ("image_height", .number("320")),
                ("created_at", .number("1497918951.91262")), ("like_count", .number("1")),
                ("poster", .object([("uid", .string(path[1])), ("username", .string("alice"))])),
            ]
        case ("posts", 2):
            members = [
                ("imageFileURL", .string("https://x/2.jpg")), ("user", .string("Ann")), ("votes", .number("2")),
                ("timestamp", .number("1700000000000")),
            ]
        case ("postLikes", 2), ("followers", 2), ("following", 2): members = [(pick(Self.ids), .bool(true))]
        case ("postLikes", 3), ("followers", 3), ("following", 3): return .bool(true)
        case ("timeline", 3): members = [("poster_uid", .string(pick(Self.ids)))]
        case ("chats", 3):
            members = [
                ("title", .string("u1, u2")), ("memberHash", .string("-123")),
                ("members", .object([("u1", .bool(true)), ("u2", .bool(true))])),
                ("lastMessage", .string("bob: hi")), ("lastMessageSent", .number("1700000000")),
            ]
        case ("messages", 3):
            members = [
                ("content", .string("hi")), ("timestamp", .number("1700000000")),
                ("sender", .object([("uid", .string("u2")), ("username", .string("bob"))])),
            ]
        default: return nil
        }
        if chance(15) { members[int(0...members.count - 1)].1 = leaf() }
        if chance(10) { members.append((pick(Self.fields), object(depth: 1))) }
        if chance(10) { members.remove(at: int(0...members.count - 1)) }
        return .object(members)
    }

    mutating func object(depth: Int) -> JSONValue {
        .object(
            (0..<int(1...3)).map { _ in
                (pick(Self.fields + Self.ids), depth > 1 && chance(30) ? object(depth: depth - 1) : leaf())
            })
    }

    /// An update's object: children by key or by path (`a/b`), nulls that remove; now and then something Firebase
    /// refuses (not an object, overlapping paths) or nothing at all.
    mutating func update(at path: [String], singleKeys: Bool = false) -> JSONValue {
        switch int(1...100) {
        case 1...4 where !singleKeys: return leaf()
        case 5...7: return .object([])
        case 8...10 where !singleKeys: return .object([("x", leaf()), ("x/y", leaf())])
        default:
            return .object(
                (0..<int(1...3)).map { _ in
                    let key =
                        !singleKeys && chance(25)
                        ? pick(Self.ids + Self.fields) + "/" + pick(Self.fields + Self.ids)
                        : pick(Self.fields + Self.ids)
                    return (key, chance(20) ? .null : value(at: path + key.split(separator: "/").map(String.init)))
                })
        }
    }
}
