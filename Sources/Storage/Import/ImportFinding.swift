/// What the importer found that changes rows it or the store already holds.
enum ImportFinding: Equatable {
    /// A `/posts/{id}` whose children, all read, say it is stored otherwise than it began to be (a leaf after its
    /// posts streamed): once the rows are in, the node is read back and stored again whole, in its shape.
    case reshaped([String], isFeedPost: Bool)
    /// A merge names this child of the node it merges into: it replaces the store's child whole (a `null`
    /// deletes it), so whatever is stored at or below it goes.
    case replacedChild([String])
    /// A key met again in one object after the rows of its earlier occurrence were sent: the last occurrence
    /// wins, so what is stored at or below the path goes.
    case repeatedKey([String])

    /// The absolute path whose stored rows go.
    var path: [String] {
        switch self {
        case .replacedChild(let path), .repeatedKey(let path), .reshaped(let path, _): path
        }
    }
}
