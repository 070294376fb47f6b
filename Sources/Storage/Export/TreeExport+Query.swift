import FirebaseTree
import Foundation

extension TreeExport {
    /// `Store.exportTree`: see there.
    func exportTree(
        at path: [String], query: TreeQuery, options: JSONTextWriter.Options = .init(),
        to write: (UnsafeBufferPointer<UInt8>) throws -> Void
    ) throws -> ExportReport {
        try exporting(options: options, to: write) { emitter, tally in
            let ordered = try tablesWithOrderedRows(under: path)
            if !path.isEmpty, try treeRows.recordPath(holding: path, orIs: true) != nil {
                try selectInRecord(at: path, query: query, ordered: ordered, into: emitter, tally: tally)
            } else if case .key = query.order {
                try selectByKey(at: path, query: query, ordered: ordered, into: emitter, tally: tally)
            } else {
                try selectByValue(at: path, query: query, ordered: ordered, into: emitter, tally: tally)
            }
        }
    }

    /// The children `keys` of the node at `path` (those it holds), as one JSON object in export order: the records
    /// a transaction of the mirror rewrites, read in a statement per table rather than one export each.
    func exportChildren(
        at path: [String], keys: [String], options: JSONTextWriter.Options = .init(),
        to write: (UnsafeBufferPointer<UInt8>) throws -> Void
    ) throws -> ExportReport {
        try exporting(options: options, to: write) { emitter, tally in
            let ordered = try tablesWithOrderedRows(under: path)
            try forEachChildRow(
                at: path, children: ChildKeyRange(keys: keys), ordered: ordered, tally: tally, emitter: emitter
            ) { _, stream, mayGrow in
                try Self.add(stream, below: path, shallow: false, mayGrow: mayGrow, to: emitter)
                return true
            }
        }
    }

    /// Key order: the bounds as a key range of every table's reads, the last N found backwards.
    private func selectByKey(
        at path: [String], query: TreeQuery, ordered: Set<TreeTable>, into emitter: TreeEmitter, tally: ExportTally
    ) throws {
        func key(_ value: TreeValue?) -> String? {
            if case .string(let key)? = value { return key }
            return nil
        }
        var range = ChildKeyRange(lower: key(query.equal ?? query.start), upper: key(query.equal ?? query.end))
        // The last N children are found backwards, and the read that writes them starts at the first of them. (The
        // first N need no such pass: the read stops after them. Narrowing it by a pass first was measured slower,
        // on Citus too, where each pass asks every shard.) Reads for a limit go by pages (`PartStream`).
        if let limit = query.limitToLast {
            guard let first = try nthLastChild(limit, at: path, in: range, ordered: ordered, tally: tally) else {
                return
            }
            range.lower = first
        }
        var current: String?
        var count = 0
        try forEachChildRow(
            at: path, children: range, ordered: ordered,
            firstPage: query.limitToFirst.map(Self.firstPage(forChildren:)),
            tally: tally, emitter: emitter
        ) { key, stream, mayGrow in
            if current.map({ !FirebaseKey.same(key, $0) }) ?? true {
                count += 1
                if let limit = query.limitToFirst, count > limit { return false }
                current = key
            }
            try Self.add(stream, below: path, shallow: false, mayGrow: mayGrow, to: emitter)
            return true
        } onLeaf: { stream in
            try Self.add(stream, below: path, shallow: false, mayGrow: true, to: emitter)
        }
    }

    /// The rows of a limit query's first page: a few per child, most children holding few rows.
    private static func firstPage(forChildren n: Int) -> Int {
        n >= PartStream.largestPage / 8 ? PartStream.largestPage : max(64, 8 * (n + 1))
    }

    /// The key of the `n`-th child in `range` from the last, or of the first one there when there are fewer; nil
    /// when there is none.
    private func nthLastChild(
        _ n: Int, at path: [String], in range: ChildKeyRange, ordered: Set<TreeTable>, tally: ExportTally
    ) throws -> String? {
        var found: String?
        var seen = 0
        try forEachChildRow(
            at: path, reversed: true, children: range, ordered: ordered, firstPage: Self.firstPage(forChildren: n),
            tally: tally
        ) { key, _, _ in
            if found.map({ !FirebaseKey.same(key, $0) }) ?? true {
                seen += 1
                if seen > n { return false }
                found = key
            }
            return true
        }
        return found
    }

    /// Value or child order: a pass that finds each child's order value and keeps the selected children's
    /// positions, then a pass that writes those children.
    private func selectByValue(
        at path: [String], query: TreeQuery, ordered: Set<TreeTable>, into emitter: TreeEmitter, tally: ExportTally
    ) throws {
        var selection = OrderSelection(query: query)
        var child: (key: String, value: OrderValue)?
        let target: [String] = if case .child(let below) = query.order { below } else { [] }
        try forEachChildRow(at: path, ordered: ordered, tally: tally) { key, stream, _ in
            if child.map({ !FirebaseKey.same(key, $0.key) }) ?? true {
                if let done = child { selection.offer(key: done.key, value: done.value.treeValue) }
                child = (key, .missing)
            }
            let below = stream.currentPath[(path.count + 1)...]
            var value = child?.value ?? .missing
            value.take(row: stream, below: below, target: target[...])
            child?.value = value
            return true
        } onLeaf: { stream in
            try Self.add(stream, below: path, shallow: false, mayGrow: true, to: emitter)
        }
        if let done = child { selection.offer(key: done.key, value: done.value.treeValue) }
        guard !selection.isEmpty else { return }
        var ordinal = -1
        var current: String?
        try forEachChildRow(at: path, ordered: ordered, tally: tally, emitter: emitter) { key, stream, mayGrow in
            if current.map({ !FirebaseKey.same(key, $0) }) ?? true {
                ordinal += 1
                current = key
            }
            if selection.contains(ordinal) {
                try Self.add(stream, below: path, shallow: false, mayGrow: mayGrow, to: emitter)
            }
            return true
        }
    }

    /// Reads the rows below the node at `path` child by child (children whose key starts with `.`, the node's
    /// priority, are skipped), handing each with its child's key to `body` until it returns false. A row that
    /// is the node itself (a leaf) goes to `onLeaf`. `firstPage`: the reads go by pages (`PartStream`), for a
    /// `body` that will likely stop early.
    private func forEachChildRow(
        at path: [String], reversed: Bool = false, children: ChildKeyRange = .all, ordered: Set<TreeTable>,
        firstPage: Int? = nil, tally: ExportTally, emitter: TreeEmitter? = nil,
        _ body: (_ key: String, _ stream: PartStream, _ mayGrow: Bool) throws -> Bool,
        onLeaf: (PartStream) throws -> Void = { _ in }
    ) throws {
        var merge = try openRows(
            at: path, reversed: reversed, children: children, ordered: ordered, firstPage: firstPage)
        defer { tally.close(&merge) }
        while let stream = merge.next() {
            tally.report.rows += 1
            let rowPath = stream.currentPath
            if rowPath.count <= path.count {
                try onLeaf(stream)
            } else if !rowPath[path.count].hasPrefix(".") {
                guard try body(rowPath[path.count], stream, merge.nextRowMayGrow) else { break }
            }
            if let emitter { try answerCountRequest(of: emitter, below: path, between: &merge) }
            try merge.advance()
        }
    }

    /// A node inside a record (or a record): read whole, then selected in memory.
    private func selectInRecord(
        at path: [String], query: TreeQuery, ordered: Set<TreeTable>, into emitter: TreeEmitter, tally: ExportTally
    ) throws {
        var node: TreeValue?
        var merge = try openRows(at: path, ordered: ordered)
        defer { tally.close(&merge) }
        while let stream = merge.next() {
            tally.report.rows += 1
            let rowPath = stream.currentPath
            if let part = try stream.table.part(from: stream.row).value {
                if rowPath.count <= path.count {
                    if let value = part.descendant(at: path[rowPath.count...]) { node = node?.merging(value) ?? value }
                } else {
                    var tree = node ?? .object([:])
                    tree.set(part, at: rowPath[path.count...])
                    node = tree
                }
            }
            try merge.advance()
        }
        guard let node else { return }
        guard let children = node.children else { return try emitter.add([], node) }
        var selection = QuerySelection(query: query)
        for (key, value) in children.sorted(by: { PartMerge.precedes([$0.key.string], [$1.key.string]) }) {
            for (key, value) in selection.offer(key: key.string, value: value) { try emitter.add([key], value) }
        }
        for (key, value) in selection.heldInKeyOrder { try emitter.add([key], value) }
    }
}

/// What a child's rows say of its order value, row by row: nothing yet, a leaf, or an object.
enum OrderValue {
    case missing
    case leaf(TreeValue)
    case object

    /// The value `TreeQuery` compares: nil for a missing value; objects all compare equal.
    var treeValue: TreeValue? {
        switch self {
        case .missing: nil
        case .leaf(let value): value
        case .object: .object([:])
        }
    }

    /// Takes in a row of the child, at `below` (its path under the child), where the order value lies at `target`
    /// under the child.
    mutating func take(row stream: PartStream, below: ArraySlice<String>, target: ArraySlice<String>) {
        let leads = zip(below, target).allSatisfy { FirebaseKey.same($0, $1) }
        guard leads else { return }
        if below.count > target.count {
            // A row inside the value: it is an object, or a leaf with a priority.
            let rest = below.dropFirst(target.count)
            if rest.count == 1, rest.first == FirebaseKey.value {
                take(try? stream.table.part(from: stream.row).value)
            } else if !(rest.count == 1 && rest.first == FirebaseKey.priority) {
                self = .object
            }
        } else {
            // The row is the value, or a record holding it.
            take(
                (try? stream.table.part(from: stream.row).value)?.descendant(at: target.dropFirst(below.count)))
        }
    }

    /// Takes in the value found at the target, as an in-memory tree.
    private mutating func take(_ value: TreeValue?) {
        guard let value else { return }
        guard let children = value.children else { return self = .leaf(value) }
        if let leaf = children[FirebaseKey.value] {
            self = .leaf(leaf)
        } else if children.keys.contains(where: { $0 != FirebaseKey.priority }) {
            self = .object
        }
    }
}

/// The children a value-ordered query selects, by their position in key order: every admitted one without a
/// limit (a bit each), else the best N kept in a heap.
struct OrderSelection {
    let query: TreeQuery
    private var ordinal = -1
    private var admitted: [UInt64] = []
    private var best: Heap<(key: String, value: TreeValue?, ordinal: Int)>
    private var chosen: Set<Int>?

    init(query: TreeQuery) {
        self.query = query
        // The heap's top is the candidate to drop: the last kept for a first N, the first kept for a last N.
        let keepsFirst = query.limitToFirst != nil
        best = Heap { a, b in
            let aFirst = query.precedes((a.key, a.value), (b.key, b.value))
            return keepsFirst ? !aFirst : aFirst
        }
    }

    /// Offers the next child in key order.
    mutating func offer(key: String, value: TreeValue?) {
        ordinal += 1
        guard query.admits(value) else { return }
        guard let limit = query.limitToFirst ?? query.limitToLast else {
            while admitted.count <= ordinal / 64 { admitted.append(0) }
            admitted[ordinal / 64] |= 1 << UInt64(ordinal % 64)
            return
        }
        best.insert((key, value, ordinal))
        if best.count > limit { best.removeTop() }
    }

    /// Whether no child was selected.
    var isEmpty: Bool { best.count == 0 && admitted.allSatisfy { $0 == 0 } }

    /// Whether the child at `ordinal` (in key order) is selected.
    mutating func contains(_ ordinal: Int) -> Bool {
        if query.limitToFirst == nil && query.limitToLast == nil {
            return ordinal / 64 < admitted.count && admitted[ordinal / 64] & (1 << UInt64(ordinal % 64)) != 0
        }
        let chosen = self.chosen ?? Set(best.elements.map(\.ordinal))
        self.chosen = chosen
        return chosen.contains(ordinal)
    }
}
