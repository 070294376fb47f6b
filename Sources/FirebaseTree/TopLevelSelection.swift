/// Which top-level nodes of a tree a command reads, as pg_restore's `-t`/`-n` select: the ones named by
/// `--only` (all when none is), less the ones named by `--exclude`.
public struct TopLevelSelection: Sendable, Equatable {
    /// The nodes named by `--only`; nil selects every node.
    public var only: Set<String>?
    /// The nodes named by `--exclude`.
    public var excluded: Set<String>

    /// A selection; nil when it selects every node (nothing to leave out).
    public init?(only: Set<String>?, excluded: Set<String>) {
        guard only != nil || !excluded.isEmpty else { return nil }
        self.only = only
        self.excluded = excluded
    }

    /// Whether the top-level node `key` is read.
    public func contains(_ key: String) -> Bool {
        !excluded.contains(key) && (only?.contains(key) ?? true)
    }
}
