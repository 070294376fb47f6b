import Foundation

/// What an export wrote.
public struct ExportReport: Sendable {
    /// Rows read from the tables.
    public var rows = 0
    /// JSON bytes written.
    public var bytes = 0
    /// Seconds from start to the last byte.
    public var seconds: Double = 0
    /// Tables that held keys needing RTDB's exact order, read with a sort instead of in index order.
    public var sortedTables: [String] = []
}

extension Store {
    /// Streams the whole tree as Firebase JSON to `write`, from one consistent snapshot: keys in RTDB order,
    /// numbers as JavaScript writes them, arrays and priorities as `options` say. Memory holds one record and a
    /// batch of rows per table, whatever the store's size.
    ///
    /// ```swift
    /// try store.exportTree { bytes in try file.write(contentsOf: bytes) }
    /// ```
    public func exportTree(
        options: JSONTextWriter.Options = .init(), to write: (UnsafeBufferPointer<UInt8>) throws -> Void
    ) throws -> ExportReport {
        let clock = ContinuousClock()
        let started = clock.now
        var report = ExportReport()
        try connection.withTransaction(isolation: .repeatableRead, readOnly: true) {
            var streams: [PartStream] = []
            for table in TreeTable.allCases {
                let exact = try connection.query(table.reorderCheckQuery()).first?.decode(Bool.self, at: 0) ?? false
                if exact { report.sortedTables.append(table.name) }
                let cursor = "export_\(table.name)"
                try connection.execute(Query(unsafeSQL:
                    "DECLARE \(Query.quoted(identifier: cursor)) NO SCROLL CURSOR FOR \(table.exportQuery(exactOrder: exact).sql)"))
                streams.append(PartStream(table: table, cursor: cursor, connection: connection))
            }
            var emitter = TreeEmitter(options: options)
            var merge = try PartMerge(streams: streams)
            while let (path, value) = try merge.next() {
                report.rows += 1
                guard let value else { continue }
                emitter.add(path, value)
                if emitter.bufferedByteCount >= 1 << 18 {
                    try emitter.drain { report.bytes += $0.count; try write($0) }
                }
            }
            emitter.finish()
            try emitter.drain { report.bytes += $0.count; try write($0) }
        }
        report.seconds = (clock.now - started).seconds
        return report
    }
}

/// One table's parts in RTDB order, fetched from a cursor in batches.
final class PartStream {
    let table: TreeTable
    private let cursor: String
    private let connection: Connection
    private var batch: QueryResult?
    private var index = 0
    private var isExhausted = false
    private static let batchSize = 5000

    init(table: TreeTable, cursor: String, connection: Connection) {
        self.table = table
        self.cursor = cursor
        self.connection = connection
    }

    /// The next part, nil after the last.
    func next() throws -> (path: [String], value: TreeValue?)? {
        if batch == nil || index >= batch!.count {
            guard !isExhausted else { return nil }
            batch = try connection.query(Query(unsafeSQL:
                "FETCH FORWARD \(Self.batchSize) FROM \(Query.quoted(identifier: cursor))"))
            index = 0
            if batch!.count < Self.batchSize { isExhausted = true }
            guard batch!.count > 0 else { return nil }
        }
        defer { index += 1 }
        do {
            return try table.part(from: batch![index])
        } catch let error as StorageError {
            throw error.adding(context: "exporting \(table.name)")
        }
    }
}

/// Merges the tables' part streams into one sequence in RTDB path order. Streams mostly run long (one table
/// after another), so the current stream is checked against the runner-up before any full comparison.
struct PartMerge {
    private var heads: [(path: [String], value: TreeValue?)?]
    private let streams: [PartStream]

    init(streams: [PartStream]) throws {
        self.streams = streams
        heads = try streams.map { try $0.next() }
    }

    mutating func next() throws -> (path: [String], value: TreeValue?)? {
        var best: Int?
        for index in heads.indices {
            guard let head = heads[index] else { continue }
            if let current = best, !Self.precedes(head.path, heads[current]!.path) { continue }
            best = index
        }
        guard let best else { return nil }
        let part = heads[best]
        heads[best] = try streams[best].next()
        return part
    }

    /// The order exports write paths in: key by key (`.priority` first, then RTDB order), a parent before its
    /// children.
    static func precedes(_ a: [String], _ b: [String]) -> Bool {
        for (x, y) in zip(a, b) where x != y {
            return FirebaseKey.exportPrecedes(x, y)
        }
        return a.count < b.count
    }
}
