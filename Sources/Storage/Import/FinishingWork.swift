import Foundation

/// The index builds and ANALYZEs of a parallel import's sessions, shared among them. Each session commits its
/// tables once its nodes are loaded and puts their builds here; every session then takes builds, its own or
/// another's, until none is left: a session done early builds the indexes of a later one's tables rather than
/// wait idle for it (1.1 GB: the session that claimed /timeline built its two indexes, 11 s, while the other had
/// nothing left to do).
///
/// A table's jobs never run at the same time (a primary key is added under ACCESS EXCLUSIVE, which would wait for
/// the other build anyway), its ANALYZE only after its indexes (it gathers statistics on their expressions too),
/// and the largest table's jobs first, so that the longest chain starts as early as it can.
final class FinishingWork: @unchecked Sendable {
    /// One build or ANALYZE of a table in a session's schema.
    struct Job: Equatable, Sendable {
        /// What the job does.
        enum Kind: Equatable, Sendable {
            /// Builds the index or key `name` by `statement` (the catalog's, schema-qualified).
            case index(name: String, statement: String)
            /// Gathers the table's statistics.
            case analyze
        }

        /// The schema of the session that loaded the table.
        var schema: String
        /// The table.
        var table: String
        /// What is done to it.
        var kind: Kind
        /// The table's size in bytes when it was committed: larger tables go first.
        var size: Int
    }

    private let condition = NSCondition()
    /// Jobs not taken yet, in the order they were given.
    private var pending: [Job] = []
    /// Index jobs not yet done, per table.
    private var unbuilt: [String: Int] = [:]
    /// Sessions that may still give jobs.
    private var giving: Int
    private var isStopped = false
    /// The index builds of the whole import (the sessions' and the import's own), for a progress display.
    private let indexCount: Int
    /// Index jobs given, and started, so far.
    private var indexesGiven = 0
    private var indexesStarted = 0
    /// The jobs running (one per table at most), oldest first: each one's table (`schema.table`) and step. And
    /// the step started last.
    private var running: [(table: String, step: ImportStep)] = []
    private var latest: ImportStep?

    /// Work for `sessions` sessions, each of which gives its jobs once (`give`) or says it has none (`giveNone`),
    /// of an import that builds `indexCount` indexes in all.
    init(sessions: Int, indexCount: Int) {
        giving = sessions
        self.indexCount = indexCount
    }

    /// What a progress display shows: the job that has run longest of those running (what the others wait for),
    /// or, between two jobs, the one started last; nil before the first.
    var currentStep: ImportStep? { condition.withLock { running.first?.step ?? latest } }

    /// Adds a session's jobs (its tables' index builds, then an ANALYZE of each); it gives no more.
    func give(_ jobs: [Job]) {
        condition.withLock {
            pending += jobs
            for job in jobs where job.kind != .analyze {
                unbuilt[Self.name(job), default: 0] += 1
                indexesGiven += 1
            }
            giving -= 1
            condition.broadcast()
        }
    }

    /// Says a session gives no jobs (it failed before it could).
    func giveNone() {
        condition.withLock {
            giving -= 1
            condition.broadcast()
        }
    }

    /// The next job to run, waiting while the jobs left are those of busy tables, ANALYZEs waiting for their
    /// indexes, or jobs sessions still loading will give; nil once there is nothing left, or after `stop`.
    func next() -> Job? {
        condition.withLock {
            while !isStopped {
                // The largest table's first; of one table's, the first given.
                var chosen: Int?
                for (index, job) in pending.enumerated() where isReady(job) {
                    if let best = chosen, pending[best].size >= job.size { continue }
                    chosen = index
                }
                if let index = chosen {
                    let job = pending.remove(at: index)
                    let step: ImportStep
                    switch job.kind {
                    case .index(let name, _):
                        indexesStarted += 1
                        // Two sessions that both wrote a table (unmapped values) both build its indexes.
                        step = .buildingIndex(
                            name: name, number: indexesStarted, count: max(indexCount, indexesGiven))
                    case .analyze:
                        step = .analyzing(tables: [job.table])
                    }
                    running.append((Self.name(job), step))
                    latest = step
                    return job
                }
                if pending.isEmpty, running.isEmpty, giving == 0 { return nil }
                condition.wait()
            }
            return nil
        }
    }

    /// Whether `job` may start: no job of its table runs, and an ANALYZE's indexes are built.
    private func isReady(_ job: Job) -> Bool {
        let table = Self.name(job)
        return !running.contains { $0.table == table } && (job.kind != .analyze || unbuilt[table, default: 0] == 0)
    }

    /// Marks `job`, which `next` gave, as done.
    func finish(_ job: Job) {
        condition.withLock {
            let table = Self.name(job)
            running.removeAll { $0.table == table }
            if job.kind != .analyze { unbuilt[table, default: 1] -= 1 }
            condition.broadcast()
        }
    }

    /// Gives no more jobs to anyone: a session failed, and the import with it.
    func stop() {
        condition.withLock {
            isStopped = true
            condition.broadcast()
        }
    }

    private static func name(_ job: Job) -> String {
        job.schema + "." + job.table
    }
}
