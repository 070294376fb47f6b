/// Writes a tree as JSON from its parts, given in RTDB path order: each part is a subtree (a typed row's
/// record, an unmapped leaf) at a path. Objects above the parts stream: they are opened and closed as the
/// paths move, so memory holds one part at a time, except that an object that may still turn out to be an array
/// (its keys so far are array indexes) or a leaf with a priority (`.priority`, `.value`) is held until that is
/// known, because both are written differently from an object.
struct TreeEmitter {
    private(set) var writer: JSONTextWriter
    /// Keys of the streamed objects that are open below the root (the root is open once `isStarted`).
    private var open: [String] = []
    private var root = RootState.notStarted
    /// The last part, held in case later parts fall inside it.
    private var pending: (path: [String], part: ExportPart)?
    /// An object held in memory while it may still be an array.
    private var held: (path: [String], value: TreeValue)?

    private enum RootState {
        case notStarted, objectOpen, held, written
    }

    init(options: JSONTextWriter.Options) {
        writer = JSONTextWriter(options: options)
    }

    /// Adds the subtree `value` at `path`. Paths must come in RTDB order; a part at or below the previous one's
    /// path is merged into it.
    mutating func add(_ path: [String], _ value: TreeValue) throws {
        try add(path, .tree(value))
    }

    /// Adds a part at `path`; see `add(_:_:)`.
    mutating func add(_ path: [String], _ part: ExportPart) throws {
        var path = path
        if !writer.options.keepsPriorities {
            if path.last == FirebaseKey.priority { return }
            if path.last == FirebaseKey.value { path.removeLast() }
        }
        var part = part
        if case .row(let table, let row) = part, !table.writesDirectly(row) {
            guard let value = try table.part(from: row).value else { return }
            part = .tree(value)
        }
        if let last = pending, path.starts(with: last.path) {
            var merged = try last.part.tree()
            if path.count == last.path.count {
                merged = merged.merging(try part.tree())
            } else {
                merged.set(try part.tree(), at: path[last.path.count...])
            }
            pending = (last.path, .tree(merged))
            return
        }
        if let last = pending { try write(last.path, last.part) }
        pending = (path, part)
    }

    /// Writes a typed table's row, whose path is `parent` and its last key column, straight from the row's text,
    /// as `add` would, and returns true; false when the row must be added the general way: a row `writesDirectly`
    /// refuses, one inside the pending part, a priority, or one that an object held or about to be opened may
    /// have to hold. The caller guarantees that no later part lies at or below the row, so it need not be kept
    /// pending.
    mutating func addDirectly(_ row: some ExportRow, of table: TreeTable, under parent: [String]) throws -> Bool {
        guard root == .objectOpen, table.writesDirectly(row) else { return false }
        let leafColumn = table.keyDepth - 1
        if let last = pending {
            guard !Self.lies(parent, row[leafColumn]!, atOrBelow: last.path) else { return false }
            pending = nil
            try write(last.path, last.part)
        }
        guard held == nil, !row.withText(leafColumn, { $0!.first == UInt8(ascii: ".") }) else { return false }
        var common = 0
        while common < open.count, common < parent.count, open[common] == parent[common] { common += 1 }
        if common < parent.count {
            // The objects about to open, each checked with its first child.
            for depth in (common + 1)..<parent.count where mayHold(.object([:]), whenAdding: parent[depth]) { return false }
            let leafMayBeIndex = row.withText(leafColumn) { FirebaseKey.arrayIndex(utf8: $0!) != nil }
            if writer.options.rendersArrays && leafMayBeIndex { return false }
        }
        if common < parent.count || open.count > parent.count { try navigate(to: parent[...]) }
        row.withText(leafColumn) { writer.key(utf8: $0!) }
        table.writeValue(of: row, to: &writer)
        return true
    }

    /// Whether the path `parent` + `leaf` lies at or below `path`.
    private static func lies(_ parent: [String], _ leaf: String, atOrBelow path: [String]) -> Bool {
        guard path.count <= parent.count + 1 else { return false }
        if path.count <= parent.count { return parent.starts(with: path) }
        return parent[...] == path.dropLast() && leaf == path.last
    }

    /// Writes what is held and closes every open object; `null` when there were no parts at all.
    mutating func finish() throws {
        if let last = pending { try write(last.path, last.part) }
        pending = nil
        try completeHeld()
        while !open.isEmpty { close() }
        switch root {
        case .objectOpen: writer.endObject()
        case .notStarted: writer.null()
        case .held, .written: break
        }
        writer.finish()
    }

    /// Hands over the JSON written so far.
    mutating func drain(_ body: (UnsafeBufferPointer<UInt8>) throws -> Void) rethrows {
        try writer.drain(body)
    }

    /// Bytes written and not yet drained.
    var bufferedByteCount: Int { writer.bytes.count }

    private mutating func write(_ path: [String], _ part: ExportPart) throws {
        if let current = held {
            if path.count > current.path.count, path.starts(with: current.path) {
                let childKey = path[current.path.count]
                if mayHold(current.value, whenAdding: childKey) {
                    var merged = current.value
                    merged.set(try part.tree(), at: path[current.path.count...])
                    held = (current.path, merged)
                    return
                }
                // A key that is not an index: the held object is an object after all, and streams from here.
                held = nil
                if let key = current.path.last {
                    try navigate(to: current.path.dropLast())
                    writer.key(key)
                    writer.beginObject()
                    open.append(key)
                } else {
                    writer.beginObject()
                    root = .objectOpen
                }
                for key in current.value.orderedKeys {
                    writer.key(key)
                    writer.value(current.value[key]!)
                }
            } else {
                try completeHeld()
            }
        }
        guard !path.isEmpty else {
            // The whole tree as one part (a `get` of a single record).
            writer.value(try part.tree())
            root = .written
            return
        }
        try navigate(to: path.dropLast(), firstChild: path.last!, holding: part, at: path)
        guard held == nil else { return }
        writer.key(path.last!)
        switch part {
        case .tree(let value): writer.value(value)
        case .row(let table, let row): table.writeValue(of: row, to: &writer)
        }
    }

    /// Writes the held object now that nothing more can fall inside it.
    private mutating func completeHeld() throws {
        guard let current = held else { return }
        held = nil
        if current.path.isEmpty {
            writer.value(current.value)
            root = .written
            return
        }
        try navigate(to: current.path.dropLast())
        writer.key(current.path.last!)
        writer.value(current.value)
    }

    /// Closes and opens streamed objects until `target` is the innermost open one. When `firstChild` is given
    /// and an object about to open would start with an array index, the part is held instead.
    private mutating func navigate(
        to target: ArraySlice<String>, firstChild: String? = nil, holding part: ExportPart? = nil, at path: [String] = []
    ) throws {
        var common = 0
        while common < open.count, common < target.count, open[common] == target[target.startIndex + common] {
            common += 1
        }
        while open.count > common { close() }
        if root == .notStarted {
            let first = target.first ?? firstChild
            if let part, let first, mayHold(.object([:]), whenAdding: first) {
                var tree = TreeValue.object([:])
                tree.set(try part.tree(), at: path[...])
                held = ([], tree)
                root = .held
                return
            }
            writer.beginObject()
            root = .objectOpen
        }
        for depth in open.count..<target.count {
            let key = target[target.startIndex + depth]
            let next = depth + 1 < target.count ? target[target.startIndex + depth + 1] : firstChild
            if let part, let next, mayHold(.object([:]), whenAdding: next) {
                let heldPath = Array(target.prefix(depth + 1))
                var tree = TreeValue.object([:])
                tree.set(try part.tree(), at: path[heldPath.count...])
                held = (heldPath, tree)
                return
            }
            writer.key(key)
            writer.beginObject()
            open.append(key)
        }
    }

    /// Whether an object holding `value` must stay in memory when `key` is added: it can still be an array (all
    /// keys indexes, no priority) or a leaf with a priority.
    private func mayHold(_ value: TreeValue, whenAdding key: String) -> Bool {
        let children = value.children ?? [:]
        if key == FirebaseKey.value { return true }
        if key == FirebaseKey.priority { return children.keys.allSatisfy { $0 == FirebaseKey.value } }
        return writer.options.rendersArrays && FirebaseKey.arrayIndex(key) != nil
            && children[FirebaseKey.priority] == nil
    }

    private mutating func close() {
        writer.endObject()
        open.removeLast()
    }
}

/// A piece of the exported tree: an in-memory subtree, or a table row written straight from its columns.
enum ExportPart {
    case tree(TreeValue)
    case row(TreeTable, Row)

    /// The part as a tree (for merging and holding).
    func tree() throws -> TreeValue {
        switch self {
        case .tree(let value): return value
        case .row(let table, let row): return try table.part(from: row).value ?? .object([:])
        }
    }
}
