import FirebaseTree

/// The posts and chat copies a sync's paths reach, by the tables that hold records per user (`HeldRecords`):
/// read before the rows go and after the new ones are in, they tell which keys changed holders, whose lookup rows
/// and likes must then be settled. A record rewritten in place keeps its key and holder, and so its kept copies.
struct TouchedKeys {
    /// What a sync touched of one table.
    enum Scope: Equatable {
        /// Nothing.
        case none
        /// Every key (the table's root, or the whole tree, was written).
        case all
        /// The keys named, those of the holders named, or both.
        case some(keys: Set<TreeKey>, holders: Set<TreeKey>)
    }

    private var scopes: [String: Scope] = [:]

    /// Keys and holders a table's scope names at most; past them it is touched whole (every key is settled),
    /// so that what a sync holds does not grow with the number of records it rewrites.
    static let namedLimit = 50_000

    /// Notes a path whose rows go (and that may be written again).
    mutating func note(_ path: [String]) {
        for records in HeldRecords.all where path.first == nil || path.first == records.table {
            // Taken out of the dictionary, so that the sets are changed in place rather than copied at each note.
            var scope = scopes.removeValue(forKey: records.table) ?? .none
            guard scope != .all, path.count >= 2 else {
                scopes[records.table] = .all
                continue
            }
            var (keys, holders): (Set<TreeKey>, Set<TreeKey>) = ([], [])
            if case .some(let known, let knownHolders) = scope { (keys, holders) = (known, knownHolders) }
            scope = .none
            if path.count == 2 { holders.insert(TreeKey(path[1])) } else { keys.insert(TreeKey(path[2])) }
            scopes[records.table] =
                keys.count + holders.count > Self.namedLimit ? .all : .some(keys: keys, holders: holders)
        }
    }

    /// What was touched of `records`' table.
    func scope(of records: HeldRecords) -> Scope { scopes[records.table] ?? .none }

    /// The records the touched keys and holders have now, per table (none for a table touched whole).
    func holdings(copies: DerivedCopies) throws -> [String: Set<DerivedCopies.Holding>] {
        var holdings: [String: Set<DerivedCopies.Holding>] = [:]
        for records in HeldRecords.all {
            guard case .some(let keys, let holders) = scope(of: records) else { continue }
            holdings[records.table] = try copies.holdings(
                of: records, keys: keys.map(\.string), holders: holders.map(\.string))
        }
        return holdings
    }

    /// The keys of `records` whose holders changed between `before` (from `holdings`) and now; nil for every
    /// key, empty when none changed or the table was not touched.
    func changedKeys(
        of records: HeldRecords, before: [String: Set<DerivedCopies.Holding>], copies: DerivedCopies
    ) throws -> [String]? {
        switch scope(of: records) {
        case .none: return []
        case .all: return nil
        case .some(let keys, let holders):
            let after = try copies.holdings(of: records, keys: keys.map(\.string), holders: holders.map(\.string))
            let changed = (before[records.table] ?? []).symmetricDifference(after)
            return Set(changed.map(\.key)).map(\.string)
        }
    }
}
