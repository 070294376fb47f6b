/// What an import does once its file is read, up to its commit, for a progress display (`importTree`'s
/// `onStep`): on a large store this takes seconds, with nothing left to read.
public enum ImportStep: Sendable, Equatable, CustomStringConvertible {
    /// Reading the nodes under `key` (/postLikes) again, once /posts is loaded, to send each like with its post's
    /// owners (one session importing a plain file). Shown, not timed: its rows and seconds are the node's.
    case readingAgain(key: String)
    /// Storing the likes read before /posts, each with its post's owners.
    case storingLikes
    /// Filling the lookup `table` kept from /posts or /chats (`post_keys`, `chat_holders`).
    case fillingLookup(table: String)
    /// Giving the likes of posts added or removed their owners (a merge or an `--at` import under /posts).
    case settlingLikes
    /// Building the secondary index `name`, the `number`th of `count`, dropped while the rows loaded.
    case buildingIndex(name: String, number: Int, count: Int)
    /// Gathering planner statistics on `tables` (ANALYZE), after a whole-tree import: one table, or on Citus
    /// every table in one statement.
    case analyzing(tables: [String])
    /// Putting the tables a whole-tree import filled in the store's (waiting for readers that began before).
    case switching
    /// A whole-tree import's commit: the server releases the files of the tables it replaced (or emptied): 1.0-1.3 s
    /// for a 3 GB store on the project's machine, kernel time freeing their cached pages. Readers do not wait for it.
    case committing

    /// How many of its target's steps it takes: the tables it analyzes, or 1.
    var count: Int {
        if case .analyzing(let tables) = self { tables.count } else { 1 }
    }

    /// What the step writes: a table, or `ImportReport.Finishing.indexes`.
    var target: String {
        switch self {
        case .readingAgain, .storingLikes, .settlingLikes: TreeTable.postLikes.name
        case .fillingLookup(let table): table
        case .buildingIndex: ImportReport.Finishing.indexes
        case .analyzing: ImportReport.Finishing.statistics
        case .switching: ImportReport.Finishing.switch
        case .committing: ImportReport.Finishing.commit
        }
    }

    /// The step in a few words.
    public var description: String {
        switch self {
        case .readingAgain(let key): "reading /\(key) again, with their posts' owners"
        case .storingLikes: "storing likes with their posts' owners"
        case .fillingLookup(let table): "filling \(table)"
        case .settlingLikes: "settling the likes of posts added or removed"
        case .buildingIndex(let name, let number, let count): "building index \(number) of \(count): \(name)"
        case .analyzing(let tables):
            "gathering statistics on \(tables.count == 1 ? tables[0] : "\(tables.count) tables") (ANALYZE)"
        case .switching: "switching the loaded tables in (waiting for readers that began before)"
        case .committing: "committing (the server releases the replaced tables' files)"
        }
    }
}

/// Times the steps of an import that follow its reading, for `ImportReport.finishing`: each lasts from its
/// `begin` to the next `begin` or `end`; steps of one target add up.
final class FinishingClock {
    private let clock = ContinuousClock()
    /// When the running step began.
    private var current: ContinuousClock.Instant?
    /// The steps so far, in order.
    private(set) var steps: [ImportReport.Finishing] = []

    /// Starts `step`, ending the one before.
    /// `onStep`, each step begun here first.
    func timing(_ onStep: @escaping (ImportStep) -> Void) -> (ImportStep) -> Void {
        { step in
            self.begin(step)
            onStep(step)
        }
    }

    func begin(_ step: ImportStep) {
        end()
        current = clock.now
        if steps.last?.target == step.target {
            steps[steps.count - 1].count += step.count
        } else {
            steps.append(.init(target: step.target, count: step.count, seconds: 0))
        }
    }

    /// Ends the running step, if any.
    func end() {
        guard let started = current else { return }
        current = nil
        // `begin` made the running step's entry the last one.
        steps[steps.count - 1].seconds += (clock.now - started).seconds
    }
}
