/// How `Store.importTree` applies a Firebase export.
public struct ImportOptions: Sendable {
    /// What happens to what the store already holds.
    public enum Mode: String, Sendable, CaseIterable {
        /// The store becomes equal to the file.
        case replace
        /// Like Firebase's `update`: children present in the file overwrite (null ones are deleted), others stay.
        case merge
    }

    /// Replace (the default) or merge.
    public var mode: Mode
    /// Parse, map, load and report, then roll back.
    public var isDryRun: Bool
    /// How many value-level rejects are let through before the import aborts; 0 aborts on the first.
    public var maximumRejects: Int

    /// `--at`: the file is the node at this path (keys from the root) rather than the whole tree; `replace`
    /// replaces that node, `merge` updates its children.
    public var at: [String]
    /// Whether a `replace` may leave empty a store (or, with `at`, a node) that held something: a file holding
    /// nothing (`null`, `{}`) is refused otherwise, since a failed backup job that saved `null` must not wipe
    /// production.
    public var allowsEmptying = false
    /// `--only`/`--exclude`: the top-level nodes imported, as pg_restore's `-t` selects tables; the others are
    /// skipped in the file and left as they are in the store. With `replace`, a selected node the file lacks is
    /// removed; with `merge`, it stays. Not with `at`. nil: every node.
    public var topLevel: TopLevelSelection?
    /// Whether a whole-tree replace loads into the indexes as they stand instead of building them after the rows
    /// (`DeferredIndexes`): slower, but no DROP or CREATE INDEX reaches the server (for DDL audits, event
    /// triggers, or index statistics to keep).
    public var keepsIndexes = false
    /// Sessions a whole-tree replace loads with (`import --jobs`): each reads the file and loads the top-level
    /// nodes it claims into tables of its own, which the import takes over before it switches them in. Used only
    /// where the file can be read again (`Store.importTree`'s `reopening`), the tables can be switched in, nothing
    /// may be rejected (`maximumRejects` 0) and the import commits (not a dry run); nil: one per core.
    public var jobs: Int?
    /// Bytes of JSON a record may hold in memory besides its typed fields (its `extra`, at most); the rest of a
    /// larger record is kept as unmapped values. Tests lower it.
    var recordMemoryBudget = 4 << 20
    /// Bytes a parallel import's session may take to hold the owner of every post (`PostOwners`), so that it
    /// sends the likes with their owners; past it the likes are staged and joined with the posts. Tests lower it.
    var likeOwnersMemoryBudget = 48 << 20
    /// How a merge deletes what the store holds under each child the file names (Firebase's update).
    enum NamedChildren {
        /// Each as the read meets it.
        case deletedAsRead
        /// All of them before the read, a statement per table: the caller knows them (the mirror's folded events).
        case deletedFirst([String])
        /// Not at all: the caller deleted them (a sync, which deleted what it rewrites before).
        case deletedByCaller
    }
    /// How a merge deletes what the store holds under each child the file names.
    var namedChildren = NamedChildren.deletedAsRead
    /// Children of /posts whose shape a first reading found (`ImportFinding.reshaped`: true for an AppCoda feed
    /// post, false for an owner's posts), which a second reading of them takes as it is rather than finding it
    /// again.
    var knownPostShapes: [TreeKey: Bool] = [:]
    /// Whether a failure's context is a write verb's (whose value is imported too): "write rolled back", where
    /// an import's says how far it read the file.
    var isWrite = false

    /// Options; the defaults replace the store and abort on the first reject.
    public init(
        mode: Mode = .replace, isDryRun: Bool = false, maximumRejects: Int = 0, at: [String] = [],
        allowsEmptying: Bool = false, keepsIndexes: Bool = false, jobs: Int? = nil
    ) {
        self.jobs = jobs
        self.allowsEmptying = allowsEmptying
        self.keepsIndexes = keepsIndexes
        self.at = at
        self.mode = mode
        self.isDryRun = isDryRun
        self.maximumRejects = maximumRejects
    }
}

/// A value the import could not keep: Firebase would refuse it or PostgreSQL cannot hold it.
public struct ImportReject: Sendable, Equatable {
    /// Its Firebase path.
    public var path: String
    /// Why it was rejected.
    public var reason: String
    /// The value as JSON text; when `isTruncated`, only its first bytes (not JSON on their own).
    public var value: String
    /// Whether `value` was cut (at 1 MB as `onReject` sees it, shorter as the report keeps it).
    public var isTruncated = false
    /// Bytes the whole value took in the input.
    public var valueBytes: Int

    /// A reject of the value whose JSON text is `value`.
    public init(path: String, reason: String, value: String, isTruncated: Bool = false, valueBytes: Int? = nil) {
        self.path = path
        self.reason = reason
        self.value = value
        self.isTruncated = isTruncated
        self.valueBytes = valueBytes ?? value.utf8.count
    }

    /// This reject with its value cut to at most `maximumBytes` bytes (at a character's boundary).
    public func cut(to maximumBytes: Int) -> ImportReject {
        guard value.utf8.count > maximumBytes else { return self }
        var end = value.utf8.index(value.utf8.startIndex, offsetBy: maximumBytes)
        while end > value.utf8.startIndex, UTF8.isContinuation(value.utf8[end]) { end = value.utf8.index(before: end) }
        var copy = self
        copy.value = String(value[..<end])
        copy.isTruncated = true
        return copy
    }
}

/// Something the import did that the operator should hear about but that loses nothing, such as a duplicate key
/// whose last occurrence won.
public struct ImportWarning: Sendable, Equatable {
    /// The Firebase path concerned.
    public var path: String
    /// What happened.
    public var message: String
}
