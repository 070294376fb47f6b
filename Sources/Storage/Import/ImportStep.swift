/// What an import does once its file is read, before it commits, for a progress display (`importTree`'s
/// `onStep`): on a large store this takes seconds, with nothing left to read.
public enum ImportStep: Sendable, Equatable, CustomStringConvertible {
    /// Storing the likes read before /posts, each with its post's owners.
    case storingLikes
    /// Filling the lookup `table` kept from /posts or /chats (`post_keys`, `chat_holders`).
    case fillingLookup(table: String)
    /// Giving the likes of posts added or removed their owners (a merge or an `--at` import under /posts).
    case settlingLikes
    /// Building the secondary index `name`, the `number`th of `count`, dropped while the rows loaded.
    case buildingIndex(name: String, number: Int, count: Int)

    /// The step in a few words.
    public var description: String {
        switch self {
        case .storingLikes: "storing likes with their posts' owners"
        case .fillingLookup(let table): "filling \(table)"
        case .settlingLikes: "settling the likes of posts added or removed"
        case .buildingIndex(let name, let number, let count): "building index \(number) of \(count): \(name)"
        }
    }
}
