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

    /// How long a statement waits for a lock before it fails (`lock_timeout`) for this connection; nil waits
    /// as long as it takes. An import, which waits for the app's transactions to end, overrides it.
    public func setLockTimeout(_ timeout: Duration?) throws {
        let milliseconds = timeout.map { Int(($0 / .milliseconds(1)).rounded(.up)) } ?? 0
        try connection.execute("SELECT set_config('lock_timeout', \("\(milliseconds)ms"), false)")
    }

    /// The tables that hold the tree, in the order `status` lists them.
    public static let treeTables = [
        "users", "posts", "feed_posts", "post_likes", "followers", "following", "timeline", "chats", "messages",
        "unmapped_values",
    ]
}
