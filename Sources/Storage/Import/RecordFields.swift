import FirebaseTree
import Foundation
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

    /// Calls `body` with each field.
    func forEach(_ body: (String, TreeValue) throws -> Void) rethrows {
        for entry in entries { try body(entry.key, entry.value) }
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

/// A typed field as the importer read it: a string or a number as the bytes of its token, which COPY takes as
/// they are (no String is made), or any other value.
enum TypedField {
    /// A string, whose UTF-8 is at `range` of its record's scalar bytes.
    case text(Range<Int>)
    /// A finite number, and its JSON text at `range` (empty for zero, whose sign is dropped): the server parses
    /// the text to the same double, correctly rounded as the reader's, without the text a double makes.
    case number(Double, text: Range<Int>)
    /// An object's children as they were read (`poster`, `members`).
    case fields(FieldList)
    /// Any other value (a boolean, an object read into memory).
    case value(TreeValue)
}

/// A record's typed slots and the bytes of its scalars, emptied and reused from record to record.
struct RecordSlots {
    /// The typed fields, by their step (nil: not read).
    var fields: [TypedField?]
    /// The UTF-8 of the typed strings and numbers.
    var bytes = GrowingBytes()

    /// The value of `field`.
    func value(of field: TypedField) -> TreeValue {
        switch field {
        case .text(let range): .string(bytes.withBytes(in: range) { String(decoding: $0, as: UTF8.self) })
        case .number(let number, _): .number(number)
        case .fields(let fields): .object(fields.object)
        case .value(let value): value
        }
    }
}

/// A record's children as the importer reads them: each typed field (one `encodeRecord` takes into columns) in
/// the slot of its step, found once as it is read, and every other child (unknown fields, `.priority`, `.value`)
/// in `rest`.
struct RecordChildren {
    /// The table whose record it is.
    let table: TreeTable
    /// The typed fields.
    private(set) var slots: RecordSlots
    /// The other children.
    var rest = FieldList()

    /// No children, in `slots` when given: empty typed slots of the table, which an earlier record left.
    init(of table: TreeTable, slots: RecordSlots? = nil) {
        self.table = table
        self.slots = slots ?? RecordSlots(fields: Array(repeating: nil, count: table.typedFieldCount))
        precondition(self.slots.fields.count == table.typedFieldCount, "slots of another table")
    }

    /// Removes every child, keeping the typed slots' storage.
    mutating func removeAll() {
        for step in slots.fields.indices where slots.fields[step] != nil { slots.fields[step] = nil }
        slots.bytes.removeAll()
        rest = FieldList()
    }

    /// Removes every child, and hands the typed slots, empty, to `body` (for the next record of the table). Call it
    /// once per record: slots handed twice are two spares that share one storage, and the spares pile up.
    mutating func removeAll(keepingSlots body: (RecordSlots) -> Void) {
        removeAll()
        body(slots)
    }

    /// Sets the typed field at `step` to the string whose UTF-8 is `text`.
    mutating func setText(_ text: UnsafeBufferPointer<UInt8>, at step: Int) {
        remove(at: step)
        let start = slots.bytes.count
        slots.bytes.append(text)
        slots.fields[step] = .text(start..<slots.bytes.count)
    }

    /// Sets the typed field at `step` to the finite number `number`, written `text` in JSON.
    mutating func setNumber(_ number: Double, text: UnsafeBufferPointer<UInt8>, at step: Int) {
        remove(at: step)
        let start = slots.bytes.count
        if number != 0 { slots.bytes.append(text) }
        slots.fields[step] = .number(number == 0 ? 0 : number, text: start..<slots.bytes.count)
    }

    /// Sets the typed object field at `step` to the children `fields`.
    mutating func setFields(_ fields: FieldList, at step: Int) {
        remove(at: step)
        slots.fields[step] = .fields(fields)
    }

    /// Sets the typed field at `step` to `value`; nil removes it.
    mutating func setValue(_ value: TreeValue?, at step: Int) {
        remove(at: step)
        slots.fields[step] = value.map { .value($0) }
    }

    /// Removes the typed field at `step`, and its bytes when they are the last (a repeated key read again
    /// replaces it: the bytes do not pile up).
    private mutating func remove(at step: Int) {
        guard let field = slots.fields[step] else { return }
        slots.fields[step] = nil
        let range: Range<Int>
        switch field {
        case .text(let text), .number(_, let text): range = text
        case .fields, .value: return
        }
        if range.upperBound == slots.bytes.count {
            slots.bytes.removeAll(after: range.lowerBound)
        } else if !range.isEmpty {
            compactBytes()
        }
    }

    /// Keeps only the bytes of the fields held, moving their ranges.
    private mutating func compactBytes() {
        var compacted = GrowingBytes()
        for step in slots.fields.indices {
            func moved(_ range: Range<Int>) -> Range<Int> {
                let start = compacted.count
                slots.bytes.withBytes(in: range) { compacted.append($0) }
                return start..<compacted.count
            }
            switch slots.fields[step] {
            case .text(let range)?: slots.fields[step] = .text(moved(range))
            case .number(let number, let range)?: slots.fields[step] = .number(number, text: moved(range))
            case .fields?, .value?, nil: break
            }
        }
        slots.bytes = compacted
    }

    /// Takes the typed field at `step` out, leaving its slot empty (its bytes stay until `removeAll`).
    mutating func takeField(at step: Int) -> TypedField? {
        var field: TypedField?
        swap(&field, &slots.fields[step])
        return field
    }

    /// Whether it has no child.
    var isEmpty: Bool { rest.isEmpty && !slots.fields.contains { $0 != nil } }
    /// Its children, typed or not.
    var count: Int { rest.count + slots.fields.count { $0 != nil } }

    /// The child `key`; setting nil removes it.
    subscript(key: String) -> TreeValue? {
        get {
            guard let step = table.typedStep(of: key) else { return rest[key] }
            return slots.fields[step].map { slots.value(of: $0) }
        }
        set {
            if let step = table.typedStep(of: key) { setValue(newValue, at: step) } else { rest[key] = newValue }
        }
    }

    /// The children as an object's.
    var object: [TreeKey: TreeValue] {
        var object = rest.object
        for (step, field) in slots.fields.enumerated() {
            if let field { object[TreeKey(table.typedFieldKey(step))] = slots.value(of: field) }
        }
        return object
    }
}

/// What is left of a record once its typed columns took their fields, for the `extra` column.
private struct RecordRest {
    var fields: FieldList

    /// Appends the typed field `field` to `row` as `take(_:_:as:into:)` does; a string or a number of its column's
    /// type goes as the bytes it was read as, from `slots`. `key` is asked for only when the field stays.
    mutating func take(
        _ field: TypedField?, _ key: @autoclosure () -> String, as kind: RecordColumn.Kind, from slots: RecordSlots,
        into row: inout CopyRowEncoder
    ) throws {
        switch (kind, field) {
        case (.text, .text(let range)?):
            try slots.bytes.withBytes(in: range) { try row.append(utf8: $0) }
        case (.number, .number(let number, let text)?) where !text.isEmpty:
            slots.bytes.withBytes(in: text) { row.append(numberText: $0, of: number) }
        case (.keys, .fields(let children)?):
            // An object of `true`s, with no dictionary made; with none `true`, it is taken as any other value.
            if try take(keysOf: children, key(), into: &row) { return }
            try take(.object(children.object), key(), as: kind, into: &row)
        default:
            try take(field.map { slots.value(of: $0) }, key(), as: kind, into: &row)
        }
    }

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
        case (.keys, .object(let children)?):
            if try take(keysOf: FieldList(children), key, into: &row) { return }
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

    /// Appends the keys of `children` whose value is `true` to `row`, sorted by byte order, and keeps the other
    /// entries under `key`; false, with nothing appended, when no value is `true`.
    private mutating func take(
        keysOf children: FieldList, _ key: @autoclosure () -> String, into row: inout CopyRowEncoder
    )
        throws -> Bool
    {
        var children = children
        var keys: [String] = []
        children.forEach { key, value in if value == .bool(true) { keys.append(key) } }
        guard !keys.isEmpty else { return false }
        keys.sort { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        for member in keys { children[member] = nil }
        try row.append(keys)
        if !children.isEmpty { fields[key()] = .object(children.object) }
        return true
    }

    /// Appends the members of the object field `field` to `row` (NULLs when it is not an object); what is left of
    /// it stays under `key`.
    mutating func take(
        members: UnsafeBufferPointer<(key: String, kind: RecordColumn.Kind)>, of field: TypedField?, _ key: String,
        from slots: RecordSlots, into row: inout CopyRowEncoder
    ) throws {
        let children: FieldList
        switch field {
        case .fields(let read)?: children = read
        case .value(.object(let object))?: children = FieldList(object)
        default:
            for _ in members { try row.append(nil as String?) }
            if let field { fields[key] = slots.value(of: field) }
            return
        }
        var inner = RecordRest(fields: children)
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
    /// The key's UTF-8 (`ProcessBytes`), which every field read is compared with.
    var keyBytes: UnsafeBufferPointer<UInt8>
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
        for index in steps.indices {
            let step = steps[index].keyBytes
            if step.count == key.count, let first = step.baseAddress, let second = key.baseAddress,
                memcmp(first, second, key.count) == 0
            {
                return index
            }
        }
        return nil
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
                        key: group.key, keyBytes: ProcessBytes.keep(Array(group.key.utf8)), kind: first.kind,
                        members: first.isMember
                            ? ProcessBytes.keep(group.columns.map { ($0.column.innerKey, $0.column.kind) }) : nil)
                })
        })

    /// Encodes the columns of a record whose children are `children` that follow its keys, as the table's
    /// `recordColumns` lay them out. Takes the children (their typed slots are left empty, `rest` too).
    func encodeRecord(children: inout RecordChildren, into row: inout CopyRowEncoder) throws {
        let steps = Self.recordSteps[rawValue]
        precondition(!steps.isEmpty && children.slots.fields.count == steps.count, "\(name) holds no records")
        var rest = RecordRest(fields: FieldList())
        swap(&rest.fields, &children.rest)
        // Each step read in place: a copy retained and released its key for every field.
        for index in steps.indices {
            let step = steps.baseAddress.unsafelyUnwrapped + index
            let field = children.takeField(at: index)
            if let members = step.pointee.members {
                // An object's members (`poster.uid`, `poster.username`): what is left of it stays under its key.
                try rest.take(members: members, of: field, step.pointee.key, from: children.slots, into: &row)
            } else {
                try rest.take(field, step.pointee.key, as: step.pointee.kind, from: children.slots, into: &row)
            }
        }
        try row.append(jsonb: rest.json)
    }
}
