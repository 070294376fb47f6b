/// A schema a parallel import's session loaded into, committed: the running import's, or what one that never
/// finished (a `kill -9`, a server stop) left behind until an import or `vacuum` drops it.
public struct ImportLeftover: Sendable, Equatable {
    /// The schema's name (`admin_import_…`).
    public var name: String
    /// Bytes its tables take on disk.
    public var bytes: Int
}
