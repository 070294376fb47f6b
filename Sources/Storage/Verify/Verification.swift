import FirebaseTree
import Foundation
internal import PostgresClient

/// What `verify` found: the differences listed, and counts of all of them.
public struct VerifyReport: Sendable {
    /// The first differences, in RTDB order of path (as many as were asked for).
    public var differences: [TreeDifference] = []
    /// How many differences of each kind there are, listed or not.
    public var counts: [TreeDifference.Kind: Int] = [:]
    /// How many differences lie under each child of the verified node, by the child's path from the root (the
    /// node's own path for a difference at the node itself): the first thousand children that differ.
    public var countsByChild: [[String]: Int] = [:]
    /// Differences under the children `countsByChild` leaves out, and how many such children there are.
    public var otherChildren = (differences: 0, children: 0)
    /// Whether fewer differences are listed than were asked for because the list reached its memory budget
    /// (48 MB; values are cut to a kilobyte past 16 MB).
    public var isListCutForMemory = false
    /// Nodes (leaves and objects) compared.
    public var nodesCompared = 0
    /// Bytes read from the source, and written by the store's export.
    public var sourceBytes = 0, storeBytes = 0
    /// Sessions that read the store's side: the export's own and its helpers.
    public var storeSessions = 1
    /// Wall-clock seconds the comparison took.
    public var seconds = 0.0
    /// Why the source was sorted before it was compared (where its keys first left RTDB order); nil when it was
    /// read in one pass.
    public var sortedBecause: String?

    /// All differences, listed or not.
    public var differenceCount: Int { counts.values.reduce(0, +) }
    /// Whether the store holds exactly what the source does.
    public var isEqual: Bool { differenceCount == 0 }
}

/// `verify`: an export file compared with the store's own export, streamed side by side.
struct Verification {
    /// The store's side.
    let export: TreeExport

    /// `Store.verify`: see there.
    func verify(opening open: () throws -> any ByteSource, options: VerifyOptions) throws -> VerifyReport {
        let started = ContinuousClock.now
        let pass = try comparing(
            opening: open, sortingFirst: options.sortingFirst, temporaryDirectory: options.temporaryDirectory
        ) { source in
            var report = VerifyReport()
            var listing = DifferenceListing(limit: options.maxListed)
            var comparison = TreeComparison(ignoringPriorities: options.ignoringPriorities) { difference in
                report.counts[difference.kind, default: 0] += 1
                listing.add(difference, under: Array(difference.path.prefix(options.at.count + 1)))
            }
            comparison.topLevel = options.topLevel
            let bytes = try compare(source, with: &comparison, at: options.at)
            report.differences = listing.differences
            report.countsByChild = listing.countsByChild
            report.otherChildren = listing.otherChildren
            report.isListCutForMemory = listing.isCutForMemory
            report.nodesCompared = comparison.nodesCompared
            (report.sourceBytes, report.storeBytes, report.storeSessions) = bytes
            return report
        }
        var report = pass.result
        report.sourceBytes = pass.sortedBytes ?? report.sourceBytes
        report.sortedBecause = pass.sortedBecause
        report.seconds = (ContinuousClock.now - started).seconds
        return report
    }

    /// `Store.verify`: see there.
    func verify(source: some ByteSource, options: VerifyOptions) throws -> VerifyReport {
        try verify(
            opening: try Self.spooled(source, temporaryDirectory: options.temporaryDirectory), options: options)
    }

    /// A source that can be read only once (stdin, a pipe) as one that can be opened again: what is read is kept
    /// in a temporary file in case the source must be sorted and so read again. Each opening after the first is
    /// a reading of its own (the rest of the source kept first), as the sources of an opener must be.
    static func spooled(
        _ source: some ByteSource, temporaryDirectory: String
    ) throws -> () throws -> any ByteSource {
        let spool = try StorageError.converting { try SpooledSource(source, temporaryDirectory: temporaryDirectory) }
        var isFirst = true
        return {
            defer { isFirst = false }
            return isFirst ? spool : try spool.replay()
        }
    }

    /// What one comparison pass made of the source, and how it was read.
    struct Pass<Result> {
        var result: Result
        /// Bytes the sorter read from the source, when it was sorted.
        var sortedBytes: Int?
        /// Why the source was sorted first, if it was.
        var sortedBecause: String?
    }

    /// Runs `pass` over the source `open` gives, which reads it in one pass while each object's keys come in RTDB
    /// order; at the first that does not (a `TreeError` of kind `.unordered`), `pass` runs again over the source
    /// with its out-of-order objects sorted (`PartlySortedSource`: a script's edit leaves a few), or, where they
    /// are too many or too large, over the source sorted whole (`TreeSorter`), with temporary files in
    /// `temporaryDirectory`: each source `open` gives starts afresh, and two of them are read at once (the scan
    /// for the objects out of order beside the pass).
    /// `sortingFirst` sorts without trying one pass. A tree error comes out as a `StorageError`.
    func comparing<Result>(
        opening open: () throws -> any ByteSource, sortingFirst: Bool, temporaryDirectory: String,
        _ pass: (any ByteSource) throws -> Result
    ) throws -> Pass<Result> {
        /// `pass` over a source with some or all of its objects sorted: a position in the sorted text is nowhere
        /// in the file, so a tree error comes without one (its path says where).
        func passOverSorted(_ source: any ByteSource) throws -> Result {
            do {
                return try pass(source)
            } catch var error as TreeError {
                error.position = nil
                throw error
            }
        }
        /// The pass over the source sorted first, said to be sorted `because`.
        func sortedPass(because reason: String) throws -> Pass<Result> {
            let sorted = try TreeSorter.sort(try open(), temporaryDirectory: temporaryDirectory)
            let result = try passOverSorted(sorted)
            return Pass(result: result, sortedBytes: sorted.bytesRead, sortedBecause: reason)
        }
        /// The pass over the source with only its out-of-order objects sorted (`PartlySortedSource`), found by a
        /// scan that runs beside it (`PartlySortedSource.Feed`), or, where that scan cannot settle the source,
        /// by the token scan first; nil when they are too many for that to pay.
        func partlySortedPass(because reason: String) throws -> Pass<Result>? {
            let feed = PartlySortedSource.Feed(scanning: try open())
            defer { feed.stop() }
            do {
                let result = try passOverSorted(
                    PartlySortedSource(try open(), sortingWhat: feed, temporaryDirectory: temporaryDirectory))
                return Pass(result: result, sortedBytes: nil, sortedBecause: reason + sorted(feed.objectCount))
            } catch let gaveUp as PartlySortedSource.ScanGaveUp where gaveUp.isUnsettled {
                guard let ranges = try PartlySortedSource.outOfOrderObjects(in: try open()) else { return nil }
                let result = try passOverSorted(
                    PartlySortedSource(try open(), sorting: ranges, temporaryDirectory: temporaryDirectory))
                return Pass(result: result, sortedBytes: nil, sortedBecause: reason + sorted(ranges.count))
            } catch is PartlySortedSource.ScanGaveUp {
                return nil
            }
        }
        /// How many objects were sorted, as the reason says it.
        func sorted(_ objects: Int) -> String {
            objects == 1 ? " (1 object sorted)" : " (\(objects) objects sorted)"
        }
        do {
            if sortingFirst { return try sortedPass(because: "sorting first was asked for") }
            do {
                return Pass(result: try pass(try open()), sortedBytes: nil, sortedBecause: nil)
            } catch let error as TreeError where error.kind == .unordered {
                return try partlySortedPass(because: error.message) ?? sortedPass(because: error.message)
            }
        } catch let error as TreeError {
            throw StorageError(error)
        }
    }

    /// Compares `source` with the store's export of the node at `path` through `comparison`; a tree error comes
    /// out as it is. Returns the bytes read from the source and written by the store's export, and the sessions
    /// that export read on. In a transaction of the caller's, the export's helpers read in `shared`
    /// (`TreeExport.sharedSnapshot()`), or there are none.
    func compare(
        _ source: any ByteSource, with comparison: inout TreeComparison, at path: [String], sharing shared: Query? = nil
    ) throws -> (source: Int, store: Int, sessions: Int) {
        let pipe = ExportPipe()
        let export = StoreExport(export: export, path: path, snapshot: shared, pipe: pipe)
        let thread = Thread { export.run() }
        thread.start()
        let sourceBytes: Int
        do {
            var sourceReader = JSONReader(source: source)
            var storeReader = JSONReader(source: ExportPipe.Source(pipe))
            try comparison.compare(source: &sourceReader, store: &storeReader, at: path)
            sourceBytes = sourceReader.bytesRead
        } catch {
            pipe.abandon()
            export.finished.wait()
            // The store's side failed first (a lost connection): its error, not the reader's account of it.
            if let exportError = export.error { throw exportError }
            throw error
        }
        export.finished.wait()
        if let exportError = export.error { throw exportError }
        return (sourceBytes, export.report?.bytes ?? 0, export.report?.sessions ?? 1)
    }
}

/// The store's export of one node into a pipe, run on a thread of its own; the store is used by nothing else
/// meanwhile (`verify` waits for `finished` before it returns).
private final class StoreExport: @unchecked Sendable {
    private let export: TreeExport
    private let path: [String]
    private let snapshot: Query?
    private let pipe: ExportPipe
    /// Signalled when the export has ended; `report` or `error` is set before.
    let finished = DispatchSemaphore(value: 0)
    private(set) var report: ExportReport?
    private(set) var error: (any Error)?

    init(export: TreeExport, path: [String], snapshot: Query?, pipe: ExportPipe) {
        self.export = export
        self.path = path
        self.snapshot = snapshot
        self.pipe = pipe
    }

    func run() {
        do {
            // The REST API's export format: priorities kept, no arrays to tell from objects. Over a session a core,
            // in verify's own transaction or in the snapshot sync's shares.
            let options = JSONTextWriter.Options(rendersArrays: false, keepsPriorities: true)
            report = try export.exportTree(at: path, options: options, jobs: Sessions.perCore, sharing: snapshot) {
                try pipe.write($0)
            }
            pipe.finish(throwing: nil)
        } catch is ExportPipe.ReaderGone {
            pipe.finish(throwing: nil)
        } catch {
            self.error = error
            pipe.finish(throwing: error)
        }
        finished.signal()
    }
}
