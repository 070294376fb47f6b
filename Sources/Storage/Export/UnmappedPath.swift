import FirebaseTree

/// The path of an `unmapped_values` row (its `root` and `path` columns), read in place from the row's text.
///
/// Consecutive rows mostly share their parent path: its keys are compared with the previous row's as bytes and
/// that array is reused, so a row costs no allocation but its last key's, and none when it is written straight
/// from the row (`lastKey`). PostgreSQL writes a `text[]` without quotes unless an element needs them (spaces,
/// commas, quotes, braces, backslashes, `NULL`); such paths take the general parser.
enum UnmappedPath {
    /// The keys of the row's path, root first.
    static func keys(of row: some ExportRow) throws -> [String] {
        [try row.text(UnmappedColumn.root.rawValue)] + (try row.textArray(UnmappedColumn.path.rawValue) ?? [])
    }

    /// The row's parent path (root first), `previous` itself when its keys are the same, and the last key when it
    /// had to be decoded anyway.
    static func parent(of row: some ExportRow, reusing previous: [String]) throws -> (parent: [String], leaf: String?) {
        try row.withText(UnmappedColumn.path.rawValue) { literal in
            guard let literal, isPlain(literal) else {
                var path = try keys(of: row)
                let leaf = path.removeLast()
                return (path, leaf)
            }
            let body = UnsafeBufferPointer(rebasing: literal[1..<(literal.count - 1)])
            // A value stored at a root: the root is the last key.
            if body.isEmpty { return ([], try row.text(UnmappedColumn.root.rawValue)) }
            // The parent's keys below the root: everything before the last comma. The last key is read when asked
            // for (`withLastKey`).
            let lastComma = body.lastIndex(of: UInt8(ascii: ","))
            let parentBytes = lastComma.map { UnsafeBufferPointer(rebasing: body[..<$0]) }
            if matches(previous, root: row, parentBytes: parentBytes) { return (previous, nil) }
            var path = [try row.text(UnmappedColumn.root.rawValue)]
            if let parentBytes {
                var index = 1
                for key in parentBytes.split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false) {
                    let bytes = UnsafeBufferPointer(rebasing: key)
                    if index < previous.count, FirebaseKey.same(previous[index], bytes) {
                        path.append(previous[index])
                    } else {
                        path.append(String(decoding: bytes, as: UTF8.self))
                    }
                    index += 1
                }
            }
            return (path, nil)
        }
    }

    /// The last key of the row's path.
    static func lastKey(of row: some ExportRow) throws -> String {
        // A path holds its root at least.
        try withLastKey(of: row) { String(decoding: $0, as: UTF8.self) } ?? keys(of: row).last ?? ""
    }

    /// Lends the last key of a row's path as bytes, when the literal needs no unescaping; nil otherwise (and for
    /// a value stored at a root).
    static func withLastKey<R>(of row: some ExportRow, _ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R?
    {
        try row.withText(UnmappedColumn.path.rawValue) { literal in
            guard let literal, isPlain(literal), literal.count > 2 else { return nil }
            let keys = UnsafeBufferPointer(rebasing: literal[1..<(literal.count - 1)])
            let start = keys.lastIndex(of: UInt8(ascii: ",")).map { $0 + 1 } ?? keys.startIndex
            return try body(UnsafeBufferPointer(rebasing: keys[start...]))
        }
    }

    /// Whether `previous` (root first) is the parent path of a row with this root and these parent keys.
    private static func matches(
        _ previous: [String], root row: some ExportRow, parentBytes: UnsafeBufferPointer<UInt8>?
    ) -> Bool {
        guard let root = previous.first, row.hasText(UnmappedColumn.root.rawValue, equalTo: root) else { return false }
        guard let parentBytes else { return previous.count == 1 }
        var index = 1
        var start = parentBytes.startIndex
        while true {
            guard index < previous.count else { return false }
            let end = parentBytes[start...].firstIndex(of: UInt8(ascii: ",")) ?? parentBytes.endIndex
            guard FirebaseKey.same(previous[index], UnsafeBufferPointer(rebasing: parentBytes[start..<end])) else {
                return false
            }
            index += 1
            if end == parentBytes.endIndex { return index == previous.count }
            start = end + 1
        }
    }

    /// A literal with no quoted element: its keys are the bytes between commas.
    private static func isPlain(_ literal: UnsafeBufferPointer<UInt8>) -> Bool {
        literal.count >= 2 && !literal.contains(UInt8(ascii: "\""))
    }
}
