internal import PostgresClient

/// A statement's rows as Storage reads them: PostgresClient's, with decoding errors arriving as `StorageError`,
/// so that nothing Storage reads lets a `DatabaseError` through its API.
struct StoreResult: RandomAccessCollection {
    /// The rows underneath.
    let base: QueryResult

    var startIndex: Int { 0 }
    var endIndex: Int { base.endIndex }
    subscript(index: Int) -> StoreRow { StoreRow(base: base[index]) }

    /// Bytes of row data the result holds.
    var dataByteCount: Int { base.dataByteCount }
}

/// One row of a `StoreResult`.
struct StoreRow {
    /// The row underneath.
    let base: Row

    /// Decodes column `column` as `T`.
    func decode<T: QueryDecodable>(_ type: T.Type = T.self, at column: Int) throws -> T {
        try StorageError.converting { try base.decode(type, at: column) }
    }

    /// Decodes the column named `name` as `T`.
    func decode<T: QueryDecodable>(_ type: T.Type = T.self, named name: String) throws -> T {
        try StorageError.converting { try base.decode(type, named: name) }
    }

    func withText<R>(_ column: Int, _ body: (UnsafeBufferPointer<UInt8>?) throws -> R) rethrows -> R {
        try base.withText(column, body)
    }

    subscript(column: Int) -> String? { base[column] }

    func isNull(_ column: Int) -> Bool { base.isNull(column) }
}
