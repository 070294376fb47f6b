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
    /// A record (one typed row's subtree, e.g. `/posts/UID/KEY`) larger than this many bytes of input aborts
    /// the import rather than being held in memory.
    public var maximumRecordBytes: Int

    /// `--at`: the file is the node at this path (keys from the root) rather than the whole tree; `replace`
    /// replaces that node, `merge` updates its children.
    public var at: [String]

    /// Options; the defaults replace the store and abort on the first reject.
    public init(mode: Mode = .replace, isDryRun: Bool = false, maximumRejects: Int = 0,
                maximumRecordBytes: Int = 64 << 20, at: [String] = []) {
        self.at = at
        self.mode = mode
        self.isDryRun = isDryRun
        self.maximumRejects = maximumRejects
        self.maximumRecordBytes = maximumRecordBytes
    }
}

/// A value the import could not keep: Firebase would refuse it or PostgreSQL cannot hold it.
public struct ImportReject: Sendable, Equatable {
    /// Its Firebase path.
    public var path: String
    /// Why it was rejected.
    public var reason: String
    /// The value as JSON text, cut at 1 MB.
    public var value: String
}

/// Something the import did that the operator should hear about but that loses nothing, such as a duplicate key
/// whose last occurrence won.
public struct ImportWarning: Sendable, Equatable {
    /// The Firebase path concerned.
    public var path: String
    /// What happened.
    public var message: String
}
