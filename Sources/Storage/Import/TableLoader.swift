internal import PostgresClient

/// Buffers encoded rows per table and streams them into `COPY … FROM STDIN`, one COPY open at a time: the table
/// being written streams directly, the others buffer until they are large, so an export's sections (all of
/// `posts`, then all of `postLikes`, …) load as long COPY runs while stray rows of other tables wait. The rows go
/// in COPY's binary format, which spares the server unescaping every text byte and parsing every number (up to
/// 45 % of a COPY's time on a table of long texts and numbers: BENCHMARKS-LOG.md, "Binary COPY").
final class TableLoader {
    struct Counts {
        var rows = 0
        var bytes = 0
    }

    /// nil: rows are encoded and dropped (reading an export without a database).
    private let connection: StoreConnection?
    private let usesFreeze: Bool
    private var encoders: [CopyRowEncoder]
    private var active: TreeTable?
    /// Rows and COPY bytes encoded per table.
    private(set) var counts: [Counts]
    /// Hears the number of rows encoded so far, every few thousand rows (for a progress display).
    var onRows: ((Int) -> Void)?
    /// Asked every few thousand rows; true stops the load with a cancellation error.
    var isCancelled: () -> Bool = { false }
    /// Rows encoded so far, all tables together.
    private(set) var totalRows = 0
    /// COPY messages sent so far: a mark is good while none was.
    private var sends = 0
    /// Another table with the same columns that a table's rows go to instead of their own, made by `create`
    /// just before the first COPY into it (so that an import with no such rows makes none).
    struct Destination {
        /// The table the rows go to.
        var table: String
        /// Makes it.
        var create: () throws -> Void
    }

    /// Tables whose rows go to a `Destination`.
    private let destinations: [TreeTable: Destination]
    /// The tables whose destination was made: some of their rows were sent there.
    private(set) var redirected: Set<TreeTable> = []

    /// The rows encoded since the last send, in order: each one's table and where it starts in that table's
    /// buffer. A mark is two numbers and a roll-back walks back only the rows it drops: the importer marks every
    /// child it reads, and rolls back only on a repeated key.
    private var journal: [(table: UInt8, start: Int)] = []
    /// Per slot (the importer's nesting depth): the sends and the journal's length at the mark.
    private var markSlots: [Int] = []

    /// COPY data goes out in messages of about this size. The server reads a whole CopyData message before it
    /// parses any of it, so messages larger than the socket buffer stall the pipeline: with 256 KB messages
    /// the server and this process took turns (3.7 s for what psql loads in 1.85 s); with 64 KB they overlap.
    static let messageSize = 1 << 16
    private static let switchThreshold = 1 << 20

    /// Per table, the column its rows begin with that is not the node's own (a like's owner, which
    /// `appendRow(_:leadingWith:_:)` writes): the counts leave it out, as if the rows were staged without it.
    private let leadingColumns: [TreeTable: String]

    /// With `usesFreeze` the COPYs write frozen rows, which PostgreSQL allows only into tables truncated (or
    /// created) in the same transaction, and which spares the first VACUUM from rewriting every page. A table's
    /// rows go to `destinations[table]` when it names one (the import stages likes there); they begin with the
    /// column `leadingColumns[table]` when it names one.
    init(
        connection: StoreConnection?, usesFreeze: Bool, destinations: [TreeTable: Destination] = [:],
        leadingColumns: [TreeTable: String] = [:]
    ) {
        self.connection = connection
        self.usesFreeze = usesFreeze
        self.destinations = destinations
        self.leadingColumns = leadingColumns
        encoders = TreeTable.allCases.map { _ in CopyRowEncoder(capacity: 0, format: .binary) }
        counts = TreeTable.allCases.map { _ in Counts() }
    }

    /// Encodes one row of `table` with `body`, then sends or switches as the buffers fill.
    func appendRow(_ table: TreeTable, _ body: (inout CopyRowEncoder) throws -> Void) throws {
        try appendRow(table, leadingWith: nil, body)
    }

    /// Encodes one row of `table` that begins with `lead` in the table's leading column, then the fields `body`
    /// encodes; `lead` is not counted.
    @inline(__always)
    func appendRow(
        _ table: TreeTable, leadingWith lead: UnsafeBufferPointer<UInt8>?, _ body: (inout CopyRowEncoder) throws -> Void
    ) throws {
        let start = encoders[table.rawValue].byteCount
        if let lead { try encoders[table.rawValue].append(utf8: lead) }
        // The lead's length and bytes; the row's field count before them stays in the row's bytes.
        let leadBytes = lead.map { 4 + $0.count } ?? 0
        try body(&encoders[table.rawValue])
        journal.append((UInt8(table.rawValue), start))
        encoders[table.rawValue].endRow()
        counts[table.rawValue].rows += 1
        totalRows += 1
        if totalRows & 4095 == 0 {
            onRows?(totalRows)
            if isCancelled() {
                throw StorageError.cancelledByUser
            }
        }
        counts[table.rawValue].bytes += encoders[table.rawValue].byteCount - start - leadBytes
        let size = encoders[table.rawValue].byteCount
        if table == active {
            if size >= Self.messageSize { try send(table) }
        } else if size >= Self.switchThreshold {
            try activate(table)
            try send(table)
        }
    }

    /// Remembers in `slot` (the importer uses the nesting depth) where the buffers stand, for `rollBack(toMarkIn:)`.
    func mark(in slot: Int) {
        let base = 2 * slot
        if markSlots.count < base + 2 {
            markSlots.append(contentsOf: repeatElement(0, count: base + 2 - markSlots.count))
        }
        markSlots[base] = sends
        markSlots[base + 1] = journal.count
    }

    /// Drops every row encoded since the mark in `slot` and returns how many per table, when none of them was
    /// sent yet; nil (dropping nothing) otherwise.
    func rollBack(toMarkIn slot: Int) -> [TreeTable: Int]? {
        let base = 2 * slot
        guard base + 2 <= markSlots.count, markSlots[base] == sends else { return nil }
        var dropped: [TreeTable: Int] = [:]
        while journal.count > markSlots[base + 1] {
            let row = journal.removeLast()
            encoders[Int(row.table)].truncate(toByteCount: row.start, droppingRows: 1)
            // The journal names tables by their raw values, which are all valid.
            if let table = TreeTable(rawValue: Int(row.table)) { dropped[table, default: 0] += 1 }
        }
        return dropped
    }

    /// Sends every buffered row and ends the open COPY, so that other statements can run.
    func flush() throws {
        for table in TreeTable.allCases where encoders[table.rawValue].byteCount > 0 {
            try activate(table)
            try send(table)
        }
        try endActive()
    }

    /// Ends the open COPY after a failure, storing nothing of it.
    func abort() {
        if active != nil { connection?.abortCopyIn() }
        active = nil
    }

    private func activate(_ table: TreeTable) throws {
        guard table != active else { return }
        try endActive()
        var target = table.name
        // Without a connection (reading a file only) nothing is sent, so nothing is made.
        if let destination = destinations[table], connection != nil {
            if !redirected.contains(table) {
                try destination.create()
                redirected.insert(table)
            }
            target = destination.table
        }
        let columns = Query.identifiers(leadingColumns[table].map { [$0] + table.columns } ?? table.columns)
        let options: Query = usesFreeze ? "FORMAT binary, FREEZE" : "FORMAT binary"
        try connection?.beginCopyIn("COPY \(identifier: target) (\(columns)) FROM STDIN WITH (\(options))")
        active = table
        try sendData(CopyRowEncoder.binaryHeader[...], of: table)
    }

    private func send(_ table: TreeTable) throws {
        let bytes = encoders[table.rawValue].bytes
        guard !bytes.isEmpty else { return }
        sends += 1
        for start in stride(from: 0, to: bytes.count, by: Self.messageSize) {
            try sendData(bytes[start..<min(bytes.count, start + Self.messageSize)], of: table)
        }
        encoders[table.rawValue].removeAllBytes()
        // Every mark is stale now (`sends` moved on), and the offsets no longer hold.
        journal.removeAll(keepingCapacity: true)
    }

    private func sendData(_ bytes: ArraySlice<UInt8>, of table: TreeTable) throws {
        do {
            try connection?.sendCopyData(bytes)
        } catch var error as StorageError {
            error.context = "loading \(table.name)"
            throw error
        }
    }

    private func endActive() throws {
        guard let table = active else { return }
        try sendData(CopyRowEncoder.binaryTrailer[...], of: table)
        active = nil
        do {
            try connection?.endCopyIn()
        } catch var error as StorageError {
            error.context = "loading \(table.name)"
            throw error
        }
    }
}
