import FirebaseTree
import Foundation
internal import PostgresClient
import Synchronization

/// Reads a whole-tree export's `CopyBlock`s ahead of it on other sessions that share its snapshot, as
/// `pg_dump -j` does: the export's transaction exports its snapshot (`pg_export_snapshot`), each helper session
/// imports it (`SET TRANSACTION SNAPSHOT`), takes the tree's read lock without waiting, and renders the last block
/// nobody has taken into a `SpillBuffer` (memory up to a budget, then an unnamed temporary file) as the value of
/// the block's root. The export's own session reads the block it reaches when no helper has taken it, and copies
/// a rendered one into its output in order; so the server's work and the console's are spread over the cores,
/// and the output is the same bytes as when one session reads everything.
///
/// A helper that cannot join (its lock would wait: an import queued for the tables; a connection refused) leaves
/// its share to the others and to the export's session; one that fails on a block ($TMPDIR full, its session
/// lost) stops, and the export's session reads that block and the rest itself; a cancel ends the export.
final class BlockScheduler: @unchecked Sendable {
    /// Thrown inside a helper's COPY once the export has ended or failed: it only unwinds the helper.
    struct Abandoned: Error {}

    /// A block rendered apart: its value's JSON, whether it has one (rows can all drop out), and what reading it
    /// counted.
    struct Rendered: @unchecked Sendable {
        let json: SpillBuffer
        let hasValue: Bool
        let report: ExportReport
    }

    private enum State {
        case open
        case takenByExport
        case takenByHelper
        case rendered(Rendered)
        case failed(any Error)
    }

    /// Bytes of a rendered block held in memory before the rest goes to its temporary file.
    static let memoryBudget = 4 << 20

    private let blocks: [CopyBlock]
    private let options: JSONTextWriter.Options
    private let condition = NSCondition()
    private var states: [State]
    private var runningHelpers = 0
    /// How many helpers joined the snapshot (read after `finish`).
    private(set) var joinedHelpers = 0
    private let isAbandoned = Atomic<Bool>(false)

    /// Starts `helpers` threads reading `blocks`, each from what `join` opens in the export's snapshot (a session
    /// beside the export's, or on Citus sessions on the nodes); a helper whose `join` fails leaves its share to the
    /// others.
    init(
        blocks: [CopyBlock], options: JSONTextWriter.Options, helpers: Int,
        joining join: @escaping @Sendable () throws -> CopyBlock.Source
    ) {
        self.blocks = blocks
        self.options = options
        states = Array(repeating: .open, count: blocks.count)
        runningHelpers = helpers
        for _ in 0..<helpers {
            let thread = Thread { [self] in
                helping(joining: join)
                condition.withLock {
                    runningHelpers -= 1
                    condition.broadcast()
                }
            }
            thread.start()
        }
    }

    /// The block at `index` rendered by a helper (waiting for it if a helper is at it), or nil when the export's
    /// session is to read it itself: nobody had taken it, or its helper failed. Throws a cancel the helper met.
    func take(_ index: Int) throws -> Rendered? {
        try condition.withLock {
            while case .takenByHelper = states[index] { condition.wait() }
            switch states[index] {
            case .open:
                states[index] = .takenByExport
                return nil
            case .rendered(let rendered):
                // Handed over once: its buffer goes with it.
                states[index] = .takenByExport
                return rendered
            case .failed(let error as StorageError) where error.sqlState == .queryCanceled:
                // Ctrl-C (or a statement timeout) ends the export.
                throw error
            case .failed:
                // Whatever else a helper met (its temporary file, its own session lost) the export's session,
                // whose own statements answer for the server, reads the table again itself.
                states[index] = .takenByExport
                return nil
            case .takenByExport, .takenByHelper:
                preconditionFailure("block \(index) taken twice")
            }
        }
    }

    /// Stops the helpers (those in a block stop at its next row) and waits until they have closed their sessions.
    func finish() {
        isAbandoned.store(true, ordering: .relaxed)
        condition.withLock {
            condition.broadcast()
            while runningHelpers > 0 { condition.wait() }
            // Blocks rendered for an export that failed before it reached them: their files go now.
            states = states.map { if case .rendered = $0 { .takenByExport } else { $0 } }
        }
    }

    /// A helper's life: join the snapshot, then render blocks until none is left.
    private func helping(joining join: () throws -> CopyBlock.Source) {
        guard let source = try? join() else { return }
        condition.withLock { joinedHelpers += 1 }
        defer { source.end() }
        while let index = claim() {
            let state: State
            do {
                state = .rendered(try render(blocks[index], from: source))
            } catch is Abandoned {
                return
            } catch {
                state = .failed(error)
            }
            condition.withLock {
                states[index] = state
                condition.broadcast()
            }
            if case .failed = state { return }
        }
    }

    /// A session in the export's snapshot holding the tree's read lock, or an error when it cannot be had now:
    /// a helper's `join` on one server.
    static func join(opening open: () throws -> StoreConnection, snapshot: Query) throws -> CopyBlock.Source {
        let connection = try open()
        try connection.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        try connection.execute(snapshot)
        // NOWAIT: the export's session holds this lock already, so only a writer queued for the tables (an
        // import) can stand in the way, and it waits for the export: waiting behind it would never end.
        try connection.execute(Reads.readLockNoWait)
        return .session(connection)
    }

    /// The last block nobody has taken, now the calling helper's; nil when none is left or the export is over.
    /// Helpers work from the end and the export's session from the start, each streaming its own: they meet
    /// near the middle of the work, and only the helpers' share is held and copied.
    private func claim() -> Int? {
        condition.withLock {
            guard !isAbandoned.load(ordering: .relaxed),
                let index = states.lastIndex(where: { if case .open = $0 { true } else { false } })
            else { return nil }
            states[index] = .takenByHelper
            return index
        }
    }

    /// Reads `block` from `source` and renders its root's value apart.
    private func render(_ block: CopyBlock, from source: CopyBlock.Source) throws -> Rendered {
        let json = SpillBuffer(memoryBudget: Self.memoryBudget, bypassingPageCache: true)
        let tally = ExportTally()
        let emitter = TreeEmitter(options: options, nesting: 1) { try json.append($0) }
        try block.render(
            from: source, into: emitter, asRoot: true, tally: tally,
            isAbandoned: { isAbandoned.load(ordering: .relaxed) })
        try emitter.finish()
        tally.report.peakHeldBytes = emitter.peakFrameBytes
        tally.report.spilledBytes = emitter.spilledBytes
        return Rendered(json: json, hasValue: emitter.hasWrittenRoot, report: tally.report)
    }
}
