internal import PostgresClient

extension Store {
    /// The tables that hold the tree, in the order `status` lists them.
    public static let treeTables = TreeTable.names

    /// Tables the store keeps from the tree's tables, in the same transaction as every write, placed on Citus so
    /// that a question by a key other than the tree's asks one shard: `post_keys`, each post's key and owner,
    /// and `chat_holders`, who holds a copy of each chat (migration 0015). Never exported.
    public static let lookupTables = TreeTable.lookupNames

    /// The distribution plan: the user group (everything keyed by a user's uid: a user's posts and their likes,
    /// follow lists, timeline and chat copies), the chat group (messages and who holds each chat, by chat key),
    /// AppCoda's feed and the post-key lookup (`post_keys`) by post key, the leftover values copied to every
    /// node, and the Auth accounts (`authTables`); a table comes after the one it is co-located with.
    /// `schema_migrations` and `check_runs` stay on the coordinator, which is the only node the console runs
    /// against.
    public static let distributionPlan = PlannedTable.plan

    /// Firebase Auth's accounts (migration 0024), kept beside the users they sign in as: their providers and
    /// password hashes by uid, the project's hash parameters (one row) on every node. Not part of the tree.
    public static let authTables = PlannedTable.authTableNames

    /// Sessions a whole-tree import or export uses unless told otherwise: one a core.
    public static var defaultJobs: Int { Sessions.perCore }
}
