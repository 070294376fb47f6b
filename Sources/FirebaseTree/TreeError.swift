/// The one error type of FirebaseTree: input that cannot be read or is not a well-formed Firebase JSON tree, or
/// output that cannot be compressed. It knows nothing of databases; Storage wraps it into `StorageError`.
public struct TreeError: Error, CustomStringConvertible, Sendable {
    /// What went wrong, broadly.
    public enum Kind: Sendable, Equatable {
        /// The input is not well-formed: malformed JSON, invalid UTF-8, a truncated or corrupt gzip stream, a
        /// number or nesting no tree can hold.
        case malformedInput
        /// The input could not be read (the operating system's error is in the message).
        case unreadable
        /// Compressing output failed.
        case compression
        /// A comparison met keys out of RTDB order, which it reads in one pass (`TreeComparison`).
        case unordered
        /// Temporary files (for sorting a tree, or keeping a copy of a pipe) could not be created, written or
        /// read: a full disk, a missing or read-only directory (the operating system's error is in the message).
        case scratchSpace
    }

    /// What went wrong, broadly.
    public var kind: Kind
    /// The human-readable message.
    public var message: String
    /// Where in the input the problem was found (offset, line and column), when it was found by the reader.
    public var position: JSONReader.Position?
    /// The Firebase path the reader was in (`/users/u1`), when known.
    public var path: String?

    /// An error; only `kind` and `message` are required.
    public init(_ kind: Kind, _ message: String, position: JSONReader.Position? = nil, path: String? = nil) {
        self.kind = kind
        self.message = message
        self.position = position
        self.path = path
    }

    /// The message, then the path as a CONTEXT line, in psql's layout.
    public var description: String {
        guard let path else { return message }
        return message + "\nCONTEXT:  reading \(path)"
    }
}
