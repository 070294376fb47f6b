import FirebaseTree
import PostgresClient

/// A record's children while they are sorted into typed columns: each `take…` removes a field of the expected
/// type, and whatever is left (unknown fields, fields of an unexpected type, `.priority`) becomes `extra`.
struct RecordFields {
    private(set) var rest: [TreeKey: TreeValue]

    init(_ fields: [TreeKey: TreeValue]) {
        rest = fields
    }

    /// Takes a string field.
    mutating func string(_ key: String) -> String? {
        guard case .string(let value)? = rest[key] else { return nil }
        rest[key] = nil
        return value
    }

    /// Takes a number field.
    mutating func number(_ key: String) -> Double? {
        guard case .number(let value)? = rest[key] else { return nil }
        rest[key] = nil
        return value
    }

    /// Takes a number field that a bigint holds exactly: an integer within ±2^53.
    mutating func integer(_ key: String) -> Int64? {
        guard case .number(let value)? = rest[key], value == value.rounded(), abs(value) <= 9_007_199_254_740_992
        else { return nil }
        rest[key] = nil
        return Int64(value)
    }

    /// Sorts the object field `key` with `body`, keeping what `body` leaves under `key` in `rest`.
    mutating func nested<T>(_ key: String, _ body: (inout RecordFields) -> T) -> T? {
        guard case .object(let children)? = rest[key] else { return nil }
        var inner = RecordFields(children)
        let result = body(&inner)
        rest[key] = inner.rest.isEmpty ? nil : .object(inner.rest)
        return result
    }

    /// Takes the keys of a `{uid: true, …}` map, sorted by byte order; entries of any other value stay.
    mutating func trueKeys(_ key: String) -> [String]? {
        guard case .object(var children)? = rest[key] else { return nil }
        let keys = children.filter { $0.value == .bool(true) }.map(\.key.string)
            .sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        for key in keys { children[key] = nil }
        rest[key] = children.isEmpty ? nil : .object(children)
        return keys.isEmpty ? nil : keys
    }

    /// What is left, as JSON for the `extra` column; nil when nothing is.
    var extraJSON: String? {
        guard !rest.isEmpty else { return nil }
        var writer = JSONTextWriter(options: .init(rendersArrays: false))
        writer.value(.object(rest))
        return String(decoding: writer.bytes, as: UTF8.self)
    }
}

extension TreeTable {
    /// Whether `key` is one of the fields `encodeRecord` takes into typed columns (compared by bytes, as keys
    /// are), which a record always holds in memory.
    func isTypedField(_ key: String) -> Bool {
        Self.typedFieldNames[rawValue].contains { FirebaseKey.same($0, key) }
    }

    /// Made once: the importer asks for every field it reads. Indexed by raw value, which is the case's index.
    private static let typedFieldNames: [[String]] = allCases.map { table in
        switch table {
        case .users: ["username"]
        case .posts: ["image_url", "image_height", "created_at", "like_count", "poster"]
        case .feedPosts: ["imageFileURL", "user", "votes", "timestamp"]
        case .timeline: ["poster_uid"]
        case .chats: ["title", "memberHash", "members", "lastMessage", "lastMessageSent"]
        case .messages: ["content", "timestamp", "sender"]
        case .postLikes, .followers, .following, .unmappedValues: []
        }
    }

    /// Encodes the row of a record at `keys` (below the table's root) whose children are `fields`.
    func encodeRecord(keys: [String], fields: [TreeKey: TreeValue], into row: inout CopyRowEncoder) throws {
        for key in keys { try row.append(key) }
        var fields = RecordFields(fields)
        switch self {
        case .users:
            try row.append(fields.string("username"))
        case .posts:
            try row.append(fields.string("image_url"))
            row.append(fields.number("image_height"))
            row.append(fields.number("created_at"))
            row.append(fields.integer("like_count"))
            let poster = fields.nested("poster") { ($0.string("uid"), $0.string("username")) }
            try row.append(poster?.0)
            try row.append(poster?.1)
        case .feedPosts:
            try row.append(fields.string("imageFileURL"))
            try row.append(fields.string("user"))
            row.append(fields.integer("votes"))
            row.append(fields.number("timestamp"))
        case .timeline:
            try row.append(fields.string("poster_uid"))
        case .chats:
            try row.append(fields.string("title"))
            try row.append(fields.string("memberHash"))
            try row.append(fields.trueKeys("members"))
            try row.append(fields.string("lastMessage"))
            row.append(fields.number("lastMessageSent"))
        case .messages:
            try row.append(fields.string("content"))
            row.append(fields.number("timestamp"))
            let sender = fields.nested("sender") { ($0.string("uid"), $0.string("username")) }
            try row.append(sender?.0)
            try row.append(sender?.1)
        case .postLikes, .followers, .following, .unmappedValues:
            preconditionFailure("\(name) holds no records")
        }
        try row.append(fields.extraJSON)
    }
}
