import FirebaseTree
import Foundation
internal import PostgresClient

/// `/posts/{id}`, which two tables share: how the importer tells an AppCoda feed post from a Makestagram owner's
/// posts by the children, whatever their order in the file.
extension TreeImporter {
    /// `/posts/{id}`: an AppCoda feed post when some child is a leaf, a `.value` or an AppCoda field; a Makestagram
    /// owner's posts when every child is an object under another key (`recordRule(at:)`). That is a
    /// property of the tree, not of the order the file writes the children in: the children are held, as a feed
    /// post's fields are, until one decides. An owner's posts that outgrow the record budget before one does stream
    /// from then on, and should a leaf still come (or a child have spilled while held), the node is told as
    /// `reshaped`, for the import to store it again whole once its rows are in.
    func postsChild() throws {
        guard isContainerToken else { return try unmapped() }
        var shape = options.knownPostShapes[TreeKey(path.key(1))].map { $0 ? PostsShape.feed : .owner } ?? .undecided
        var record = heldRecord(of: .feedPosts)
        var priority: TreeValue?
        var isReshaped = false
        var hasSpilledWhileHeld = false
        let rowsBefore = emittedRows
        try streamChildren(
            onDuplicate: { record.children[$0] = nil },
            onPriority: {
                priority = $0
                return true
            }
        ) { key in
            let isPost = self.isContainerToken && !Self.isFeedField(key)
            switch shape {
            case .feed:
                return try self.readField(key, of: .feedPosts, into: &record)
            case .owner:
                if isPost { return try self.record(.posts) }
                // A leaf after the posts streamed: what was stored of the node is stored again once all of it is.
                isReshaped = true
                return try self.unmapped()
            case .undecided:
                guard isPost else {
                    shape = .feed
                    return try self.readField(key, of: .feedPosts, into: &record)
                }
                if record.bytes >= self.options.recordMemoryBudget {
                    // Past the budget with posts only: an owner's posts, which stream.
                    shape = .owner
                    try self.emitHeldPosts(&record)
                    // A repeat of this key right after it rolls back to here, not over the held posts.
                    self.loader.mark(in: self.path.count - 1)
                    return try self.record(.posts)
                }
                let rows = self.emittedRows
                try self.readField(key, of: .feedPosts, into: &record)
                // A child larger than what is left of the budget went out as unmapped values, as a feed post's
                // does; under an owner's posts it is a post's place.
                if self.emittedRows > rows { hasSpilledWhileHeld = true }
            }
        }
        if shape == .undecided {
            shape = .owner
            try emitHeldPosts(&record)
        }
        if hasSpilledWhileHeld, shape == .owner { isReshaped = true }
        if shape == .feed {
            record.children[FirebaseKey.priority] = priority
            try emitRecord(.feedPosts, record: &record, rowsBefore: rowsBefore)
        } else {
            record.children.removeAll { spareSlots[TreeTable.feedPosts.rawValue].append($0) }
            if let priority, emittedRows > rowsBefore {
                try emitUnmappedLeaf(path.keys() + [FirebaseKey.priority], priority)
            }
        }
        if isReshaped { _ = try onFinding(.reshaped(path.keys(), isFeedPost: shape == .feed)) }
    }

    /// How `/posts/{id}` is stored, as far as its children read so far tell.
    enum PostsShape {
        /// Every child so far an object under a key that is no AppCoda field: held.
        case undecided
        /// An AppCoda feed post: one record.
        case feed
        /// A Makestagram owner's posts: a record per child.
        case owner
    }

    /// Whether a child of `/posts/{id}` under `key` makes it a feed post whatever its value: an AppCoda field or
    /// `.value`.
    static func isFeedField(_ key: UnsafeBufferPointer<UInt8>) -> Bool {
        if key.first == UInt8(ascii: ".") { return pseudoChild(key) == .value }
        return appCodaFieldKeys.contains { FirebaseKey.same($0, key) }
    }

    static let appCodaFieldKeys = Array(appCodaFields)

    /// Emits the posts held in `record` (the children of an undecided `/posts/{id}`, all objects) as an owner's
    /// posts, each a record of its own, and empties it.
    func emitHeldPosts(_ record: inout HeldRecord) throws {
        let posts = record.children.object.sorted { FirebaseKey.exportPrecedes($0.key.string, $1.key.string) }
        // The record is handed back once, when postsChild is done with it.
        record.children.removeAll()
        record.bytes = 0
        for (key, value) in posts {
            guard case .object(let fields) = value else { continue }
            var post = heldRecord(of: .posts)
            for (field, child) in fields { post.children[field.string] = child }
            var text = key.string
            text.withUTF8 { path.append($0) }
            defer { path.removeLast() }
            try emitRecord(.posts, record: &post, rowsBefore: emittedRows)
        }
    }

    /// For the path of `/posts/{id}`, whose children tell how it is stored, the rule (`TreeComparison.Rewrites`):
    /// it is an AppCoda feed post, one record, when some child is a leaf, `.value` or an AppCoda field (its key,
    /// and whether its value is an object); a Makestagram owner's posts otherwise. The order of the children does
    /// not matter. Nil for any other path.
    static func recordRule(at path: [String]) -> ((String, Bool) -> Bool)? {
        guard path.count - 1 == TreeTable.feedPosts.keyDepth, path.first == TreeTable.feedPosts.rootKey else {
            return nil
        }
        return { key, isObject in !isObject || key == FirebaseKey.value || appCodaFields.contains(key) }
    }

    /// Whether the import stores every object at `path` as one record, whatever its children: the path is as
    /// deep as a record table's keys under its root, and not one that /posts shares between two tables.
    static func storesRecord(at path: [String]) -> Bool {
        guard let root = path.first else { return false }
        return TreeTable.tables(under: root).contains { table in
            !table.isLeaf && table != .feedPosts && table.keyDepth == path.count - 1
        }
    }
}
