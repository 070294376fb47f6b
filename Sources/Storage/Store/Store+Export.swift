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
            let inFlight = PartStream.InFlight()
            for table in TreeTable.allCases {
                let exact = try connection.query(table.reorderCheckQuery()).first?.decode(Bool.self, at: 0) ?? false
                if exact { report.sortedTables.append(table.name) }
                let cursor = "export_\(table.name)"
                try connection.execute(Query(unsafeSQL:
                    "DECLARE \(Query.quoted(identifier: cursor)) NO SCROLL CURSOR FOR \(table.exportQuery(exactOrder: exact).sql)"))
                streams.append(PartStream(table: table, cursor: cursor, connection: connection, inFlight: inFlight))
            }
            // A FETCH still in flight when writing fails must be collected before the ROLLBACK can be sent.
            defer { if inFlight.stream != nil { connection.drainResults() } }
            var emitter = TreeEmitter(options: options)
            var merge = try PartMerge(streams: streams)
            while let (path, stream) = try merge.next() {
                report.rows += 1
                if stream.table == .unmappedValues {
                    if let value = try stream.table.part(from: stream.currentRow).value { try emitter.add(path, value) }
                } else {
                    try emitter.add(path, .row(stream.table, stream.currentRow))
                }
                if emitter.bufferedByteCount >= 1 << 18 {
                    try emitter.drain { report.bytes += $0.count; try write($0) }
                }
                try merge.advance()
            }
            try emitter.finish()
            try emitter.drain { report.bytes += $0.count; try write($0) }
        }
        report.seconds = (clock.now - started).seconds
        return report
    }
}

/// One table's rows in RTDB order, fetched from a cursor in batches. The next batch is requested as soon as one
/// arrives, so the server reads it while this process writes JSON; one request is in flight per connection.
final class PartStream {
    let table: TreeTable
    private let cursor: String
    private let connection: Connection
    private var batch: QueryResult?
    private var index = 0
    private var isExhausted = false
    /// The row `advance()` moved to, and its path; nil path after the last row.
    private(set) var currentRow: Row!
    private(set) var currentPath: [String]?
    private let inFlight: InFlight
    private var prefetched: QueryResult?
    private static let batchSize = 5000

    /// The one stream whose FETCH the connection is running, shared by the streams of one export.
    final class InFlight {
        var stream: PartStream?
    }

    init(table: TreeTable, cursor: String, connection: Connection, inFlight: InFlight) {
        self.table = table
        self.cursor = cursor
        self.connection = connection
        self.inFlight = inFlight
    }

    private var fetch: Query {
        Query(unsafeSQL: "FETCH FORWARD \(Self.batchSize) FROM \(Query.quoted(identifier: cursor))")
    }

    /// Collects the FETCH in flight on the connection, whichever stream it belongs to.
    private func settle() throws {
        guard let owner = inFlight.stream else { return }
        inFlight.stream = nil
        owner.prefetched = try connection.receive(owner.fetch)
    }

    /// Moves to the next row.
    func advance() throws {
        if batch == nil || index >= batch!.count {
            currentPath = nil
            currentRow = nil
            guard !isExhausted else { return }
            if prefetched == nil, inFlight.stream !== self {
                try settle()
                try connection.sendWithoutWaiting(fetch)
                inFlight.stream = self
            }
            if inFlight.stream === self { try settle() }
            batch = prefetched
            prefetched = nil
            index = 0
            if batch!.count < Self.batchSize {
                isExhausted = true
            } else {
                try settle()
                try connection.sendWithoutWaiting(fetch)
                inFlight.stream = self
            }
            guard batch!.count > 0 else { return }
        }
        currentRow = batch![index]
        index += 1
        do {
            currentPath = try table.path(of: currentRow)
        } catch let error as StorageError {
            throw error.adding(context: "exporting \(table.name)")
        }
    }
}

/// Merges the tables' row streams into one sequence in export path order. Streams mostly run long (one table
/// after another), so the current stream's next row is compared with the runner-up only.
struct PartMerge {
    private let streams: [PartStream]
    private var best: Int?
    private var runnerUp: Int?

    init(streams: [PartStream]) throws {
        self.streams = streams
        for stream in streams { try stream.advance() }
        rank()
    }

    /// The next row's path and its stream, positioned on the row; nil after the last.
    func next() throws -> ([String], PartStream)? {
        guard let best, let path = streams[best].currentPath else { return nil }
        return (path, streams[best])
    }

    /// Moves past the row `next()` returned.
    mutating func advance() throws {
        guard let current = best else { return }
        try streams[current].advance()
        if let path = streams[current].currentPath,
            runnerUp.flatMap({ streams[$0].currentPath }).map({ Self.precedes(path, $0) }) ?? true
        {
            return
        }
        rank()
    }

    private mutating func rank() {
        best = nil
        runnerUp = nil
        for index in streams.indices {
            guard let path = streams[index].currentPath else { continue }
            if let first = best, !Self.precedes(path, streams[first].currentPath!) {
                if let second = runnerUp, !Self.precedes(path, streams[second].currentPath!) { continue }
                runnerUp = index
            } else {
                runnerUp = best
                best = index
            }
        }
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
