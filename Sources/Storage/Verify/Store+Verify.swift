import FirebaseTree
import Foundation

/// What `verify` found: the differences listed, and counts of all of them.
public struct VerifyReport: Sendable {
    /// The first differences, in RTDB order of path (as many as were asked for).
    public var differences: [TreeDifference] = []
    /// How many differences of each kind there are, listed or not.
    public var counts: [TreeDifference.Kind: Int] = [:]
    /// How many differences lie under each child of the verified node, by the child's path from the root (the
    /// node's own path for a difference at the node itself).
    public var countsByChild: [[String]: Int] = [:]
    /// Nodes (leaves and objects) compared.
    public var nodesCompared = 0
    /// Bytes read from the source, and written by the store's export.
    public var sourceBytes = 0, storeBytes = 0
    /// Wall-clock seconds the comparison took.
    public var seconds = 0.0

    /// All differences, listed or not.
    public var differenceCount: Int { counts.values.reduce(0, +) }
    /// Whether the store holds exactly what the source does.
    public var isEqual: Bool { differenceCount == 0 }
}

extension Store {
    /// Compares the node at `path` with `source`, a Firebase JSON export of that node, under the Realtime
    /// Database's semantics (see `TreeComparison`), and reports where they differ. Read-only, from one snapshot:
    /// the store's side is its export, streamed from another thread while the source is read, so memory stays
    /// bounded whatever the size of either.
    ///
    /// `maxListed` differences are kept in the report (in RTDB order of path); all are counted.
    public func verify(
        source: some ByteSource, at path: [String] = [], ignoringPriorities: Bool = false, maxListed: Int = 1000
    ) throws -> VerifyReport {
        let clock = ContinuousClock()
        let started = clock.now
        let pipe = ExportPipe()
        let export = StoreExport(store: self, path: path, pipe: pipe)
        let thread = Thread { export.run() }
        thread.start()
        var report = VerifyReport()
        do {
            var sourceReader = JSONReader(source: source)
            var storeReader = JSONReader(source: ExportPipe.Source(pipe))
            var comparison = TreeComparison(ignoringPriorities: ignoringPriorities) { difference in
                report.counts[difference.kind, default: 0] += 1
                report.countsByChild[Array(difference.path.prefix(path.count + 1)), default: 0] += 1
                if report.differences.count < maxListed { report.differences.append(difference) }
            }
            try StorageError.converting {
                try comparison.compare(source: &sourceReader, store: &storeReader, at: path)
            }
            report.nodesCompared = comparison.nodesCompared
            report.sourceBytes = sourceReader.bytesRead
        } catch {
            pipe.abandon()
            export.finished.wait()
            // The store's side failed first (a lost connection): its error, not the reader's account of it.
            if let exportError = export.error { throw exportError }
            throw error
        }
        export.finished.wait()
        if let exportError = export.error { throw exportError }
        report.storeBytes = export.report?.bytes ?? 0
        report.seconds = (clock.now - started).seconds
        return report
    }
}

/// The store's export of one node into a pipe, run on a thread of its own; the store is used by nothing else
/// meanwhile (`verify` waits for `finished` before it returns).
private final class StoreExport: @unchecked Sendable {
    private let store: Store
    private let path: [String]
    private let pipe: ExportPipe
    /// Signalled when the export has ended; `report` or `error` is set before.
    let finished = DispatchSemaphore(value: 0)
    private(set) var report: ExportReport?
    private(set) var error: (any Error)?

    init(store: Store, path: [String], pipe: ExportPipe) {
        self.store = store
        self.path = path
        self.pipe = pipe
    }

    func run() {
        do {
            // The REST API's export format: priorities kept, no arrays to tell from objects.
            let options = JSONTextWriter.Options(rendersArrays: false, keepsPriorities: true)
            report = try store.exportTree(at: path, options: options) { try pipe.write($0) }
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
