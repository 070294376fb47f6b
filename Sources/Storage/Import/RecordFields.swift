import FirebaseTree
internal import PostgresClient

/// A record's children as they were read. A record has a handful of fields, which a search comparing bytes finds
/// sooner than a dictionary hashes one key (import holds every record of an export this way); past
/// `linearLimit` fields (a hostile record may hold hundreds of thousands within its memory budget) a dictionary
/// of positions keeps each lookup constant.
struct FieldList {
    private var entries: [(key: String, value: TreeValue)] = []
    /// Each key's position in `entries`, once there are more than `linearLimit`.
    private var positions: [TreeKey: Int]?
    private static let linearLimit = 16

    init() {}

    /// The children of an object read into memory.
    init(_ object: [TreeKey: TreeValue]) {
        for (key, value) in object { self[key.string] = value }
    }

    var isEmpty: Bool { entries.isEmpty }
    var count: Int { entries.count }

    /// The field `key` (compared as bytes, as keys are); setting nil removes it.
    subscript(key: String) -> TreeValue? {
        get { index(of: key).map { entries[$0].value } }
        set {
            switch (index(of: key), newValue) {
            case (let index?, let value?): entries[index].value = value
            case (let index?, nil): remove(at: index)
            case (nil, let value?): append(key, value)
            case (nil, nil): break
            }
        }
    }

    /// Removes and returns the field `key` when `matches` accepts its value; leaves it otherwise.
    mutating func take<T>(_ key: String, _ matches: (TreeValue) -> T?) -> T? {
        guard let index = index(of: key), let value = matches(entries[index].value) else { return nil }
        remove(at: index)
        return value
    }

    /// The fields as an object's children.
    var object: [TreeKey: TreeValue] {
        Dictionary(entries.map { (TreeKey($0.key), $0.value) }, uniquingKeysWith: { $1 })
    }

    private func index(of key: String) -> Int? {
        if let positions { return positions[TreeKey(key)] }
        // Read in place: `firstIndex` handed each entry (a key and a value) over as a copy, retained and released.
        return entries.withUnsafeBufferPointer { entries in
            entries.indices.first { FirebaseKey.same(entries[$0].key, key) }
        }
    }

    private mutating func append(_ key: String, _ value: TreeValue) {
        // Most records hold a handful of fields: one allocation rather than one per doubling.
        if entries.capacity == 0 { entries.reserveCapacity(8) }
        entries.append((key, value))
        if positions != nil {
            positions?[TreeKey(key)] = entries.count - 1
        } else if entries.count > Self.linearLimit {
            positions = Dictionary(
                entries.indices.map { (TreeKey(entries[$0].key), $0) }, uniquingKeysWith: { $1 })
        }
    }

    /// Fields have no order, so the last one takes the removed one's place.
    private mutating func remove(at index: Int) {
        let last = entries.count - 1
        if positions != nil {
            positions?[TreeKey(entries[index].key)] = nil
            if index != last { positions?[TreeKey(entries[last].key)] = index }
        }
        // Moved rather than swapped: a swap copied both entries, retaining their strings.
        let moved = entries.removeLast()
        if index != last { entries[index] = moved }
    }
}

/// A record's children while they are sorted into typed columns: each `take…` removes a field of the expected
/// type, and whatever is left (unknown fields, fields of an unexpected type, `.priority`) becomes `extra`.
struct RecordFields {
    private(set) var rest: FieldList

    init(_ fields: FieldList) {
        rest = fields
    }

    /// Moves `fields` in (leaving them empty), so that taking fields changes them in place rather than a copy.
    init(taking fields: inout FieldList) {
        rest = FieldList()
        swap(&rest, &fields)
    }

    /// Takes a string field.
    mutating func string(_ key: String) -> String? {
        rest.take(key) { if case .string(let value) = $0 { value } else { nil } }
    }

    /// Takes a number field.
    mutating func number(_ key: String) -> Double? {
        rest.take(key) { if case .number(let value) = $0 { value } else { nil } }
    }

    /// Takes a number field that a bigint holds exactly: an integer within ±2^53.
    mutating func integer(_ key: String) -> Int64? {
        rest.take(key) {
            guard case .number(let value) = $0, value == value.rounded(), abs(value) <= 9_007_199_254_740_992 else {
                return nil
            }
            return Int64(value)
        }
    }

    /// Sorts the object field `key` with `body`, keeping what `body` leaves under `key` in `rest`.
    mutating func nested<T>(_ key: String, _ body: (inout RecordFields) throws -> T) rethrows -> T? {
        guard case .object(let children)? = rest[key] else { return nil }
        var inner = RecordFields(FieldList(children))
        let result = try body(&inner)
        rest[key] = inner.rest.isEmpty ? nil : .object(inner.rest.object)
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
        writer.value(.object(rest.object))
        return String(decoding: writer.bytes, as: UTF8.self)
    }
}

extension RecordFields {
    /// Takes the field `key` as `kind` keeps it and appends it to `row` (NULL when it is missing or of another
    /// type, and then it stays in `rest`).
    mutating func take(_ key: String, as kind: RecordColumn.Kind, into row: inout CopyRowEncoder) throws {
        switch kind {
        case .text: try row.append(string(key))
        case .number: row.append(number(key))
        case .integer: row.append(integer(key))
        case .keys: try row.append(trueKeys(key))
        }
    }
}

/// A typed field of a record as `encodeRecord` takes it: a field, or an object field whose members go to columns.
private struct RecordStep {
    var key: String
    var kind: RecordColumn.Kind
    /// The object field's members, in column order; nil for a field.
    var members: UnsafeBufferPointer<(key: String, kind: RecordColumn.Kind)>?
}

extension TreeTable {
    /// Whether `key` is one of the fields `encodeRecord` takes into typed columns (compared by bytes, as keys
    /// are), which a record always holds in memory.
    func isTypedField(_ key: String) -> Bool {
        Self.recordSteps[rawValue].contains { FirebaseKey.same($0.key, key) }
    }

    /// Each table's `recordFieldGroups` as steps, made once (`ProcessBytes`): the importer asks for every field
    /// and every record. Indexed by raw value, which is the case's index.
    private nonisolated(unsafe) static let recordSteps = ProcessBytes.keep(
        allCases.map { table in
            ProcessBytes.keep(
                table.recordFieldGroups.map { group in
                    let first = group.columns[0].column
                    return RecordStep(
                        key: group.key, kind: first.kind,
                        members: first.isMember
                            ? ProcessBytes.keep(group.columns.map { ($0.column.innerKey, $0.column.kind) }) : nil)
                })
        })

    /// Encodes the row of a record at `keys` (below the table's root) whose children are `fields`, as the
    /// table's `recordColumns` lay it out. Takes the fields (`fields` is left empty), sorting them in place.
    func encodeRecord(keys: [String], fields list: inout FieldList, into row: inout CopyRowEncoder) throws {
        let steps = Self.recordSteps[rawValue]
        precondition(!steps.isEmpty, "\(name) holds no records")
        for key in keys { try row.append(key) }
        var fields = RecordFields(taking: &list)
        for step in steps {
            guard let members = step.members else {
                try fields.take(step.key, as: step.kind, into: &row)
                continue
            }
            // An object's members (`poster.uid`, `poster.username`): what is left of it stays under its key.
            let taken: Void? = try fields.nested(step.key) { inner in
                for member in members { try inner.take(member.key, as: member.kind, into: &row) }
            }
            if taken == nil {
                for _ in members { try row.append(nil as String?) }
            }
        }
        try row.append(fields.extraJSON)
    }
}
