import FirebaseTree
import Foundation
internal import PostgresClient

/// The walk: an object's children one by one, with Firebase's rules for keys, nulls, pseudo-children, repeated
/// keys and limits; which top-level nodes it reads is `TopLevelNodes`' to say.
extension TreeImporter {
    /// Streams the children of the current object or array to `body`; an object's `.priority` is held until it
    /// has a child, and dropped if it never gets one.
    /// `onPriority` may take the object's priority instead (returning true); an optional closure would escape, and
    /// box the caller's captured record on every call.
    func streamChildren(
        onDuplicate: (String) -> Void = { _ in }, onPriority: (TreeValue) -> Bool = { _ in false },
        _ body: (_ key: UnsafeBufferPointer<UInt8>) throws -> Void
    ) throws {
        let depth = path.count
        let rowsBefore = emittedRows
        try forEachChild(onDuplicate: onDuplicate) { key in
            guard Self.pseudoChild(key) == .priority else { return try body(key) }
            guard let value = try self.leafValue() else { return }
            if onPriority(value) { return }
            self.pendingPriorities.removeAll { $0.path.count == depth + 1 }
            self.pendingPriorities.append((self.path.keys(), value))
        }
        if let last = pendingPriorities.last, last.path.count == depth + 1 {
            if emittedRows > rowsBefore {
                try beforeEmit()
            } else {
                pendingPriorities.removeLast()
            }
        }
    }

    /// A pseudo-child's key.
    enum PseudoChild {
        case priority, value
    }

    /// Which pseudo-child `key` names, if any: one byte read spares every other key two comparisons.
    static func pseudoChild(_ key: UnsafeBufferPointer<UInt8>) -> PseudoChild? {
        guard key.first == UInt8(ascii: ".") else { return nil }
        if FirebaseKey.same(FirebaseKey.priority, key) { return .priority }
        if FirebaseKey.same(FirebaseKey.value, key) { return .value }
        return nil
    }

    var isContainerToken: Bool {
        reader.token == .objectStart || reader.token == .arrayStart
    }

    /// Calls `body` for each child of the object or array the current token opens, with `path` extended by the
    /// child's key and the reader on the child's first token; `body` gets the key's bytes too, valid until it
    /// reads the child's children. Nulls vanish; bad keys, paths too deep or too long and misplaced
    /// `.priority`/`.value` are rejected; a repeated key's earlier occurrence is removed (`onDuplicate`, never
    /// optional: an optional closure escapes, and the record it captured was boxed on the heap for each record).
    func forEachChild(
        onDuplicate: (String) -> Void = { _ in }, _ body: (_ key: UnsafeBufferPointer<UInt8>) throws -> Void
    ) throws {
        // The tracker of this depth, changed in place: taking it out of the array and back copied it (a dozen
        // reference counts per object read). Every nested call is a child's, one level deeper.
        let depth = path.count
        precondition(depth == objectsBeingRead, "one key tracker per object being read")
        if depth == keyTrackers.count { keyTrackers.append(KeyTracker()) }
        objectsBeingRead += 1
        defer {
            objectsBeingRead -= 1
            keyTrackers[depth].reset()
        }
        // A merge's update names the children of the node it merges into (checked once for the object).
        var deletesAsRead = false
        if case .deletedAsRead = options.namedChildren { deletesAsRead = true }
        let replacesChildren =
            options.mode == .merge && deletesAsRead && depth == options.at.count
            && FirebaseKey.samePath(path.keys(), options.at)
        var previousSibling: SiblingMark?
        var hasValue = false
        var hasChildren = false
        while try reader.moveToNextChild() {
            // Valid until the reader moves to another child: `body` has it until it reads the child's children.
            let key = reader.childKey
            if depth == 0 {
                switch topLevel.admit(key, position: { reader.position }) {
                case .read: break
                case .skip:
                    // Another session imports it, or this one later: it reads the node's keys, values and errors then.
                    if isContainerToken { try reader.skipContainerUnchecked() }
                    continue
                case .stop: return
                }
            }
            if let problem = FirebaseKey.problem(with: key) {
                try reject(problem, at: childPath(key))
                continue
            }
            switch keyTrackers[depth].insert(key) {
            case .new:
                break
            case .duplicate:
                // The sibling before went down to this level last: its key is the path's, just removed.
                let isPrevious = previousSibling != nil && path.isKeyJustRemoved(key)
                let text = String(decoding: key, as: UTF8.self)
                try duplicate(text, rollingBack: isPrevious ? previousSibling : nil)
                onDuplicate(text)
            case .maybe:
                let text = String(decoding: key, as: UTF8.self)
                try duplicate(text, rollingBack: nil, isCertain: false)
                onDuplicate(text)
            }
            if replacesChildren {
                // Firebase's update: each child the file names replaces the store's child whole (null deletes it).
                report.rowsReplaced += try onFinding(.replacedChild(childPath(key))).values.reduce(0, +)
            }
            if reader.token == .null { continue }
            if depth + 1 > Self.maximumDepth {
                try reject(FirebaseKey.tooDeep, at: childPath(key))
                continue
            }
            if path.byteCount + key.count + 1 > Self.maximumPathBytes {
                try reject(FirebaseKey.pathTooLong, at: childPath(key))
                continue
            }
            switch Self.pseudoChild(key) {
            case .priority:
                guard reader.token == .string || reader.token == .number else {
                    try reject("a priority must be a string or a number", at: childPath(key))
                    continue
                }
            case .value:
                guard depth > 0 else {
                    // The whole tree as a leaf (with a priority): the store holds named nodes only.
                    try reject("a leaf value at the root; an export's root must be an object", at: childPath(key))
                    continue
                }
                guard !isContainerToken, !hasChildren else {
                    try reject("\".value\" must be a leaf, beside nothing but \".priority\"", at: childPath(key))
                    continue
                }
                hasValue = true
            case nil:
                guard !hasValue else {
                    try reject("a node with a \".value\" cannot have children", at: childPath(key))
                    continue
                }
                hasChildren = true
            }
            path.append(key)
            defer { path.removeLast() }
            loader.mark(in: depth)
            previousSibling = SiblingMark(priorityRows: priorityRowsEmitted)
            try body(key)
        }
    }

    /// The path of the child `key` of the node at `path`, as Strings.
    func childPath(_ key: UnsafeBufferPointer<UInt8>) -> [String] {
        path.keys() + [String(decoding: key, as: UTF8.self)]
    }

    /// A child as it started (the loader marked its buffers in the slot of its depth): a repeat of its key right
    /// after it drops its rows from the loader's buffers, unsent, rather than deleting them (a DELETE in the
    /// import's transaction leaves a dead row that every later DELETE of the same key walks past: 20,000 repeats
    /// took minutes).
    struct SiblingMark {
        /// Held priorities of enclosing objects written by then; rows written later may hold one.
        var priorityRows: Int
    }

    /// A key met twice in one object (or, unless `isCertain`, maybe: then the store is asked): the last
    /// occurrence wins, so what the earlier one stored goes. `previous` is the child read just before, when it
    /// had the same key.
    func duplicate(_ key: String, rollingBack previous: SiblingMark?, isCertain: Bool = true) throws {
        let fullPath = path.keys() + [key]
        pendingPriorities.removeAll { FirebaseKey.isPath($0.path[...], atOrBelow: fullPath[...]) }
        var deleted: [TreeTable: Int]
        if let previous, previous.priorityRows == priorityRowsEmitted,
            let dropped = loader.rollBack(toMarkIn: path.count)
        {
            deleted = dropped
        } else {
            deleted = try onFinding(.repeatedKey(fullPath))
        }
        for (table, count) in deleted { deletedRows[table, default: 0] += count }
        guard isCertain || deleted.values.contains(where: { $0 > 0 }) else { return }
        report.warningCount += 1
        if report.warnings.count < Self.maximumWarningsKept {
            report.warnings.append(
                .init(
                    path: Self.describe(fullPath[...]),
                    message: "duplicate key at \(reader.position): the last occurrence wins"))
        }
    }
}
