import FirebaseTree
import Foundation

/// A transaction's puts and patches folded into the nodes they leave changed: disjoint paths, each with its value
/// after every event (nil: removed), as Firebase would hold them after applying the events in order. Written
/// together (`TreeImport.store(_:allowsEmptying:)`), a thousand one-leaf patches cost about one write instead of
/// a thousand.
struct EventFold {
    /// A changed node.
    struct Node {
        /// Its value as the events left it; nil: removed.
        var value: TreeValue?
        /// Whether some event wrote a value at or below it, which removed any leaf at its ancestors (Firebase
        /// replaces a leaf written below). Its value alone does not say so once a later event removed it.
        var clearsLeavesAbove: Bool
    }

    /// The changed nodes by path (keys from the store's root).
    private(set) var nodes: [[TreeKey]: Node] = [:]
    /// For each path, how many changed nodes lie strictly below it: a set removes them, and most sets have none.
    private var nodesBelow: [[TreeKey]: Int] = [:]

    var isEmpty: Bool { nodes.isEmpty }

    /// Whether the nodes' values alone do not say what the events did: a node removed after a value was written
    /// at or below it, which removed leaves above it that its removal does not. Such events are written one by one.
    var needsEventByEvent: Bool {
        // A top-level node has no leaf above it: the root is never one.
        removesLocation || nodes.contains { $0.key.count > 1 && $0.value.value == nil && $0.value.clearsLeavesAbove }
    }

    /// Whether an event removed the whole streamed location: the store refuses that event itself (unless allowed),
    /// whatever later events of the transaction write, so it is written event by event.
    private(set) var removesLocation = false

    /// Folds in Firebase's `set` of `value` (nil: remove) at `path`.
    mutating func set(_ value: TreeValue?, at path: [String]) {
        let keys = path.map { TreeKey($0) }
        // Inside a node already changed: the change lands in its value.
        for depth in 0..<keys.count {
            let ancestor = Array(keys[..<depth])
            guard let held = nodes[ancestor] else { continue }
            nodes[ancestor]?.value = TreeValue.setting(value, at: path[depth...], in: held.value)
            // A value written inside it removed any leaf above it, whatever a later event leaves of it.
            if value.flatMap(\.normalized) != nil { nodes[ancestor]?.clearsLeavesAbove = true }
            return
        }
        let value = value.flatMap(\.normalized)
        var clears = value != nil
        if nodesBelow[keys, default: 0] > 0 {
            for below in nodes.keys where below.count > keys.count && below.starts(with: keys) {
                clears = remove(below) || clears
            }
        }
        if let node = nodes[keys] {
            clears = clears || node.clearsLeavesAbove
        } else {
            for depth in 0..<keys.count { nodesBelow[Array(keys[..<depth]), default: 0] += 1 }
        }
        nodes[keys] = Node(value: value, clearsLeavesAbove: clears)
    }

    /// Folds in a put event's `json` at `path`, read as Firebase's `set` reads it (refused as a write refuses it).
    mutating func put(_ json: String, at path: [String]) throws {
        let value = try TreeValue.parse(json: json, normalizing: false)
        try TreeImport.refusePseudoChildProblems(in: value, at: path)
        set(value, at: path)
    }

    /// Folds in a patch event's `json` at `path`: Firebase's multi-path `update`, each named child set.
    mutating func patch(_ json: String, at path: [String]) throws {
        for (below, value) in try TreeImport.updatedPaths(json: json, under: path) {
            set(value, at: path + below)
        }
    }

    /// Folds in a feed event below `at`, a put as `set` and a patch as `update`.
    mutating func add(_ event: FeedEvent, at: [String]) throws {
        guard let json = event.json else { return }
        if event.isPatch {
            try patch(json, at: at + event.path)
        } else {
            try put(json, at: at + event.path)
            if event.path.isEmpty, nodes[at.map { TreeKey($0) }]?.value == nil { removesLocation = true }
        }
    }

    /// The fold with the nodes inside a record (`recordPaths(holding:)` finds them all at once) folded into the
    /// record's whole value, the records under one parent read together (`readChildren(parent, keys)`): they are
    /// then one merge, where each node would be a read and a rewrite of its record.
    func liftedIntoRecords(
        recordPaths: ([[String]]) throws -> [[String]?],
        readChildren: ([String], [String]) throws -> [TreeKey: TreeValue]
    ) throws -> EventFold {
        // What decides between the fold and event by event was asked of this fold: the lifted one only writes.
        var lifted = EventFold()
        var records: [[TreeKey]: [TreeKey: [(below: [String], value: TreeValue?)]]] = [:]
        let changed = nodes.map { (path: $0.key.map(\.string), value: $0.value.value) }
        let holders = try recordPaths(changed.map(\.path))
        for ((path, value), record) in zip(changed, holders) {
            guard path.count > 2, let record else {
                lifted.set(value, at: path)
                continue
            }
            let parent = record.dropLast().map { TreeKey($0) }
            records[parent, default: [:]][TreeKey(record[record.count - 1]), default: []].append(
                (Array(path[record.count...]), value))
        }
        for (parent, children) in records {
            let path = parent.map(\.string)
            let held = try readChildren(path, children.keys.map(\.string))
            for (key, changes) in children {
                var value = held[key]
                for change in changes { value = TreeValue.setting(change.value, at: change.below, in: value) }
                lifted.set(value, at: path + [key.string])
            }
        }
        return lifted
    }

    /// The writes that store the changed nodes: a node alone under its parent is set; several under one parent
    /// are one merge of its children.
    var nodeWrites: [TreeImport.NodeWrite] {
        byParent.map { parent, children in
            guard let parent, children.count > 1 else {
                let path = parent.map { $0 + [children[0].key] } ?? []
                return TreeImport.NodeWrite(path: path, json: TreeImport.json(children[0].value), mode: .replace)
            }
            var writer = JSONTextWriter(options: .init(rendersArrays: false))
            writer.beginObject()
            for (key, value) in children {
                writer.key(key)
                if let value { writer.value(value) } else { writer.null() }
            }
            writer.endObject()
            return TreeImport.NodeWrite(
                path: parent, json: String(decoding: writer.bytes, as: UTF8.self), mode: .merge,
                children: children.map(\.key))
        }
    }

    /// The changed nodes grouped by parent, each group in path order, the groups in path order: a group is one
    /// merge of its parent's children (the root's own change, if any, comes alone as a group with no parent).
    var byParent: [(parent: [String]?, children: [(key: String, value: TreeValue?)])] {
        var groups: [[TreeKey]: [(key: String, value: TreeValue?)]] = [:]
        var root: TreeValue??
        for (path, node) in nodes {
            guard let last = path.last else {
                root = .some(node.value)
                continue
            }
            groups[Array(path.dropLast()), default: []].append((last.string, node.value))
        }
        var result: [(parent: [String]?, children: [(key: String, value: TreeValue?)])] =
            root.map { [(nil, [("", $0)])] } ?? []
        let parents = groups.sorted { FirebaseKey.pathPrecedes($0.key.map(\.string), $1.key.map(\.string)) }
        for (parent, children) in parents {
            result.append((parent.map(\.string), children.sorted { FirebaseKey.precedes($0.key, $1.key) }))
        }
        return result
    }

    /// Removes the node at `path`; whether it cleared leaves above it.
    private mutating func remove(_ path: [TreeKey]) -> Bool {
        guard let node = nodes.removeValue(forKey: path) else { return false }
        for depth in 0..<path.count {
            let ancestor = Array(path[..<depth])
            nodesBelow[ancestor, default: 1] -= 1
            if nodesBelow[ancestor] == 0 { nodesBelow[ancestor] = nil }
        }
        return node.clearsLeavesAbove
    }
}
