import Foundation
/// The PostgreSQL store of the app's Firebase tree: the domain operations and the maintenance work run
/// through it, each in one transaction.
///
/// ```swift
/// let store = Store(connection: try Connection(conninfo: url))
/// let status = try store.status()
/// ```
public final class Store {
    /// The connection every operation runs on.
    public let connection: Connection

    /// A store on an open connection.
    public init(connection: Connection) {
        self.connection = connection
    }

    /// The tables that hold the tree, in the order `status` lists them.
    public static let treeTables = [
        "users", "posts", "feed_posts", "post_likes", "followers", "following", "timeline", "chats", "messages",
        "unmapped_values",
    ]
}
