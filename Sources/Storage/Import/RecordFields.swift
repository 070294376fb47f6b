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
            case (let index?, nil): _ = remove(at: index)
            case (nil, let value?): append(key, value)
            case (nil, nil): break
            }
        }
    }

    /// Removes and returns the field `key`.
    mutating func remove(_ key: String) -> TreeValue? {
        guard let index = index(of: key) else { return nil }
        return remove(at: index)
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
    private mutating func remove(at index: Int) -> TreeValue {
        let last = entries.count - 1
        if positions != nil {
            positions?[TreeKey(entries[index].key)] = nil
            if index != last { positions?[TreeKey(entries[last].key)] = index }
        }
        // Moved rather than swapped: a swap copied both entries, retaining their strings.
        var moved = entries.removeLast()
        if index != last { swap(&moved, &entries[index]) }
        return moved.value
    }
}

/// A record's children as the importer reads them: each typed field (one `encodeRecord` takes into columns) in
/// the slot of its step, found once as it is read, and every other child (unknown fields, `.priority`, `.value`)
/// in `rest`.
struct RecordChildren {
    /// The table whose record it is.
    let table: TreeTable
    /// The typed fields, by their step (nil: not read).
    var typed: [TreeValue?]
    /// The other children.
    var rest = FieldList()

    /// No children, in `slots` when given: empty typed slots of the table, which an earlier record left.
    init(of table: TreeTable, slots: [TreeValue?]? = nil) {
        self.table = table
        typed = slots ?? Array(repeating: nil, count: table.typedFieldCount)
        precondition(typed.count == table.typedFieldCount, "slots of another table")
    }

    /// Removes every child, and hands the typed slots, empty, to `body` (for the next record of the table).
    mutating func removeAll(keepingSlots body: ([TreeValue?]) -> Void) {
        for step in typed.indices where typed[step] != nil { typed[step] = nil }
        rest = FieldList()
        body(typed)
    }

    /// Whether it has no child.
    var isEmpty: Bool { rest.isEmpty && !typed.contains { $0 != nil } }
    /// Its children, typed or not.
    var count: Int { rest.count + typed.count { $0 != nil } }

    /// The child `key`; setting nil removes it.
    subscript(key: String) -> TreeValue? {
        get { table.typedStep(of: key).map { typed[$0] } ?? rest[key] }
        set {
            if let step = table.typedStep(of: key) { typed[step] = newValue } else { rest[key] = newValue }
        }
    }

    /// The children as an object's.
    var object: [TreeKey: TreeValue] {
        var object = rest.object
        for (step, value) in typed.enumerated() {
            if let value { object[TreeKey(table.typedFieldKey(step))] = value }
        }
        return object
    }
}

/// What is left of a record once its typed columns took their fields, for the `extra` column.
private struct RecordRest {
    var fields: FieldList

    /// Appends `value` to `row` as `kind` keeps it; NULL when it is missing or of another type (then it stays, in
    /// `fields` under `key`), and an object of `true`s keeps its other entries there.
    mutating func take(_ value: TreeValue?, _ key: String, as kind: RecordColumn.Kind, into row: inout CopyRowEncoder)
        throws
    {
        switch (kind, value) {
        case (.text, .string(let text)?):
            try row.append(text)
            return
        case (.number, .number(let number)?):
            row.append(number)
            return
        case (.integer, .number(let number)?) where number == number.rounded() && abs(number) <= 9_007_199_254_740_992:
            row.append(Int64(number))
            return
        case (.keys, .object(var children)?):
            // Sorted by byte order; entries of any other value stay.
            let keys = children.filter { $0.value == .bool(true) }.map(\.key.string)
                .sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
            if !keys.isEmpty {
                for member in keys { children[member] = nil }
                try row.append(keys)
                if !children.isEmpty { fields[key] = .object(children) }
                return
            }
        default:
            break
        }
        switch kind {
        case .text: try row.append(nil as String?)
        case .number: row.append(nil as Double?)
        case .integer: row.append(nil as Int64?)
        case .keys: try row.append(nil as [String]?)
        }
        if let value { fields[key] = value }
    }

    /// Appends the members of the object field `value` to `row` (NULLs when it is not an object); what is left of
    /// it stays under `key`.
    mutating func take(
        members: UnsafeBufferPointer<(key: String, kind: RecordColumn.Kind)>, of value: TreeValue?, _ key: String,
        into row: inout CopyRowEncoder
    ) throws {
        guard case .object(let children)? = value else {
            for _ in members { try row.append(nil as String?) }
            if let value { fields[key] = value }
            return
        }
        var inner = RecordRest(fields: FieldList(children))
        for member in members {
            try inner.take(inner.fields.remove(member.key), member.key, as: member.kind, into: &row)
        }
        if !inner.fields.isEmpty { fields[key] = .object(inner.fields.object) }
    }

    /// What is left, as JSON; nil when nothing is.
    var json: String? {
        guard !fields.isEmpty else { return nil }
        var writer = JSONTextWriter(options: .init(rendersArrays: false))
        writer.value(.object(fields.object))
        return String(decoding: writer.bytes, as: UTF8.self)
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
    /// The step of the field `key` among those `encodeRecord` takes into typed columns (compared by bytes, as keys
    /// are), which a record always holds in memory; nil for any other field.
    func typedStep(of key: String) -> Int? {
        var key = key
        return key.withUTF8 { typedStep(of: $0) }
    }

    /// The step of the field whose key has the bytes `key`, as `typedStep(of:)` finds it.
    func typedStep(of key: UnsafeBufferPointer<UInt8>) -> Int? {
        let steps = Self.recordSteps[rawValue]
        return steps.indices.first { FirebaseKey.same(steps[$0].key, key) }
    }

    /// The number of fields `encodeRecord` takes into typed columns.
    var typedFieldCount: Int { Self.recordSteps[rawValue].count }

    /// The key of the typed field at `step`.
    func typedFieldKey(_ step: Int) -> String { Self.recordSteps[rawValue][step].key }

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

    /// Encodes the columns of a record whose children are `children` that follow its keys, as the table's
    /// `recordColumns` lay them out. Takes the children (their typed slots are left empty, `rest` too).
    func encodeRecord(children: inout RecordChildren, into row: inout CopyRowEncoder) throws {
        let steps = Self.recordSteps[rawValue]
        precondition(!steps.isEmpty && children.typed.count == steps.count, "\(name) holds no records")
        var rest = RecordRest(fields: FieldList())
        swap(&rest.fields, &children.rest)
        for (index, step) in steps.enumerated() {
            var value: TreeValue?
            swap(&value, &children.typed[index])
            if let members = step.members {
                // An object's members (`poster.uid`, `poster.username`): what is left of it stays under its key.
                try rest.take(members: members, of: value, step.key, into: &row)
            } else {
                try rest.take(value, step.key, as: step.kind, into: &row)
            }
        }
        try row.append(rest.json)
    }
}
