import FirebaseTree

/// A Realtime Database query on the children of one node, as `firebase database:get` and the REST API take it:
/// an order, then `startAt`/`endAt`/`equalTo` on the ordered value, then `limitToFirst`/`limitToLast`.
public struct TreeQuery: Sendable, Equatable {
    /// What the children are ordered by.
    public enum Order: Sendable, Equatable {
        /// The child's key, in RTDB key order (32-bit integers first, numerically).
        case key
        /// The child's own value.
        case value
        /// The value at this path below each child (`orderByChild("poster/username")`).
        case child([String])
    }

    /// The order; filters and limits apply in it.
    public var order: Order
    /// Children whose ordered value is at least this.
    public var start: TreeValue?
    /// Children whose ordered value is at most this.
    public var end: TreeValue?
    /// Children whose ordered value is this.
    public var equal: TreeValue?
    /// The first N children, in the order.
    public var limitToFirst: Int?
    /// The last N children, in the order.
    public var limitToLast: Int?

    /// A query; with nothing but an order it selects every child.
    public init(
        order: Order, start: TreeValue? = nil, end: TreeValue? = nil, equal: TreeValue? = nil,
        limitToFirst: Int? = nil, limitToLast: Int? = nil
    ) {
        self.order = order
        self.start = start
        self.end = end
        self.equal = equal
        self.limitToFirst = limitToFirst
        self.limitToLast = limitToLast
    }

    /// The value a child is ordered by; nil stands for a missing value (null), which sorts first.
    func orderValue(key: String, child: TreeValue) -> TreeValue? {
        switch order {
        case .key: .string(key)
        case .value: Self.plain(child)
        case .child(let path): child.descendant(at: path).flatMap(Self.plain)
        }
    }

    /// Whether a child with this ordered value passes the filters.
    func admits(_ value: TreeValue?) -> Bool {
        if let equal, compare(value, equal) != 0 { return false }
        if let start, compare(value, start) < 0 { return false }
        if let end, compare(value, end) > 0 { return false }
        return true
    }

    /// Whether the child (a, keyA) comes before (b, keyB) in the query's order; ties go by key.
    func precedes(_ a: (key: String, value: TreeValue?), _ b: (key: String, value: TreeValue?)) -> Bool {
        let order = compare(a.value, b.value)
        return order != 0 ? order < 0 : FirebaseKey.precedes(a.key, b.key)
    }

    /// RTDB's order of values: null, false, true, numbers, strings (by UTF-16 code units), objects; keys in key
    /// order when ordering by key.
    func compare(_ a: TreeValue?, _ b: TreeValue?) -> Int {
        if case .key = order, case .string(let x)? = a, case .string(let y)? = b {
            return FirebaseKey.precedes(x, y) ? -1 : (FirebaseKey.same(x, y) ? 0 : 1)
        }
        let (rankA, rankB) = (Self.rank(a), Self.rank(b))
        guard rankA == rankB else { return rankA < rankB ? -1 : 1 }
        switch (a, b) {
        case (.number(let x)?, .number(let y)?): return x < y ? -1 : (x == y ? 0 : 1)
        case (.string(let x)?, .string(let y)?):
            // Code units, as JavaScript compares: `==` would take "é" and "e\u{301}" for equal.
            return x.utf16.lexicographicallyPrecedes(y.utf16) ? -1 : (x.utf16.elementsEqual(y.utf16) ? 0 : 1)
        default: return 0
        }
    }

    private static func rank(_ value: TreeValue?) -> Int {
        switch value {
        case nil: 0
        case .bool(false)?: 1
        case .bool(true)?: 2
        case .number?: 3
        case .string?: 4
        case .object?: 5
        }
    }

    /// A value without its priority: a leaf with one is `{".value": v, ".priority": p}`.
    private static func plain(_ value: TreeValue) -> TreeValue? {
        guard let children = value.children else { return value }
        if let leaf = children[FirebaseKey.value] { return leaf }
        let rest = children.filter { $0.key != FirebaseKey.priority }
        return rest.isEmpty ? nil : .object(rest)
    }
}

/// Picks the children a query selects from children given one at a time in key order (or in reverse key order,
/// for the last N by key), holding at most the limit's number of children (or one, without a limit).
struct QuerySelection {
    let query: TreeQuery
    let readsBackwards: Bool
    private(set) var selected: [(key: String, value: TreeValue, order: TreeValue?)] = []
    /// With a limit in key order, the first N met are final: no later child can displace them.
    private(set) var isComplete = false

    init(query: TreeQuery, readsBackwards: Bool = false) {
        self.query = query
        self.readsBackwards = readsBackwards
    }

    /// Offers the next child; returns the children that are certain to be in the result and can be written now
    /// (only without a limit, when children come in key order).
    mutating func offer(key: String, value: TreeValue) -> [(key: String, value: TreeValue)] {
        guard !key.hasPrefix("."), !isComplete else { return [] }
        let order = query.orderValue(key: key, child: value)
        guard query.admits(order) else { return [] }
        guard let limit = query.limitToFirst ?? query.limitToLast else { return [(key, value)] }
        let candidate = (key: key, value: value, order: order)
        if case .key = query.order {
            // Children arrive in key order: the first N are the first N; the last N slide.
            if query.limitToFirst != nil || readsBackwards {
                selected.append(candidate)
                isComplete = selected.count >= limit
            } else {
                selected.append(candidate)
                if selected.count > limit { selected.removeFirst() }
            }
            return []
        }
        // Keep the best N in the query's order (first N: smallest; last N: largest).
        let index = selected.firstIndex { !query.precedes(($0.key, $0.order), (key, order)) } ?? selected.count
        selected.insert(candidate, at: index)
        if selected.count > limit {
            if query.limitToFirst != nil || readsBackwards { selected.removeLast() } else { selected.removeFirst() }
        }
        return []
    }

    /// The selected children held back for a limit, in key order.
    var heldInKeyOrder: [(key: String, value: TreeValue)] {
        selected.sorted { PartMerge.precedes([$0.key], [$1.key]) }.map { ($0.key, $0.value) }
    }
}
