/// A JSON document read as the node at a path of a larger tree: `{"k1":{"k2":` + the document + `}}`, so that
/// `import --at /k1/k2` maps it exactly as it would be mapped there.
public struct NestedSource: ByteSource {
    private var base: any ByteSource
    private var prefix: [UInt8]
    private var suffix: [UInt8]
    private var isBaseDone = false

    /// Bytes read before the document's first: a reader given `firstOffset: -prefixLength` reports positions in
    /// the document's own bytes, lines and columns.
    public let prefixLength: Int

    /// The document `base`, nested at `path` (keys from the root). Not `isClosed`: `base` closes the objects
    /// itself, being the rest of a file from a value of the node at `path` on (a node read after the others).
    public init(_ base: some ByteSource, at path: [String], isClosed: Bool = true) {
        self.base = base
        var prefix: [UInt8] = []
        for key in path {
            prefix.append(UInt8(ascii: "{"))
            key.utf8CString.withUnsafeBufferPointer { characters in
                characters.withMemoryRebound(to: UInt8.self) {
                    JSONTextWriter.appendQuoted(UnsafeBufferPointer(rebasing: $0.dropLast()), to: &prefix)
                }
            }
            prefix.append(UInt8(ascii: ":"))
        }
        self.prefix = prefix
        prefixLength = prefix.count
        suffix = isClosed ? Array(repeating: UInt8(ascii: "}"), count: path.count) : []
    }

    /// Reads the prefix, then the document, then the suffix.
    public mutating func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        if !prefix.isEmpty { return Self.take(&prefix, into: buffer) }
        if !isBaseDone {
            let count = try base.read(into: buffer)
            if count > 0 { return count }
            isBaseDone = true
        }
        return Self.take(&suffix, into: buffer)
    }

    private static func take(_ bytes: inout [UInt8], into buffer: UnsafeMutableRawBufferPointer) -> Int {
        let count = min(bytes.count, buffer.count)
        buffer.copyBytes(from: bytes[..<count])
        bytes.removeFirst(count)
        return count
    }
}
