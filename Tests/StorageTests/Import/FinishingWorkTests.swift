import Foundation
import Synchronization
import Testing

@testable import Storage

/// The index builds and ANALYZEs a parallel import's sessions share: every job once, a table's jobs one at a
/// time, its ANALYZE after its indexes, the largest table's first, and nobody done before everyone's jobs are.
@Suite("Finishing work shared by sessions")
struct FinishingWorkTests {
    private typealias Job = FinishingWork.Job

    private static func jobs(_ schema: String, _ table: String, size: Int, indexes: [String]) -> [Job] {
        indexes.map { Job(schema: schema, table: table, kind: .index(name: $0, statement: ""), size: size) }
            + [Job(schema: schema, table: table, kind: .analyze, size: size)]
    }

    private static func label(_ job: Job) -> String {
        switch job.kind {
        case .index(let name, _): "\(job.schema).\(job.table) \(name)"
        case .analyze: "\(job.schema).\(job.table) analyze"
        }
    }

    @Test func oneSessionTakesTheLargestTablesJobsFirstAndEachTablesAnalyzeAfterItsIndexes() {
        let work = FinishingWork(sessions: 1, indexCount: 4)
        work.give(
            Self.jobs("s1", "users", size: 10, indexes: ["users_pkey"])
                + Self.jobs("s1", "timeline", size: 900, indexes: ["timeline_key_order", "timeline_pkey"])
                + Self.jobs("s1", "posts", size: 300, indexes: ["posts_pkey"]))
        var order: [String] = []
        while let job = work.next() {
            order.append(Self.label(job))
            work.finish(job)
        }
        #expect(
            order == [
                "s1.timeline timeline_key_order", "s1.timeline timeline_pkey", "s1.timeline analyze",
                "s1.posts posts_pkey", "s1.posts analyze", "s1.users users_pkey", "s1.users analyze",
            ])
        // Done stays done.
        #expect(work.next() == nil)
    }

    /// Sessions that give their jobs at different times, each running whatever is ready: a session done early
    /// waits for the others' jobs and runs them; no table has two jobs at once; every job runs once.
    @Test func sessionsRunEachOthersJobsAndNeverTwoOfOneTableAtOnce() throws {
        for sessions in [2, 3, 5] {
            let work = FinishingWork(sessions: sessions, indexCount: 0)
            let events = Mutex<[(session: Int, label: String, table: String, isStart: Bool)]>([])
            let given = (0..<sessions).map { session in
                (0..<4).flatMap { table in
                    Self.jobs(
                        "s\(session)", "t\(table)", size: (table + 1) * (session + 1),
                        indexes: (0...table).map { "i\($0)" })
                }
            }
            let group = DispatchGroup()
            for session in 0..<sessions {
                group.enter()
                Thread {
                    // Later sessions finish loading later.
                    Thread.sleep(forTimeInterval: 0.01 * Double(session))
                    work.give(given[session])
                    while let job = work.next() {
                        let table = job.schema + "." + job.table
                        events.withLock { $0.append((session, Self.label(job), table, true)) }
                        Thread.sleep(forTimeInterval: 0.001)
                        events.withLock { $0.append((session, Self.label(job), table, false)) }
                        work.finish(job)
                    }
                    group.leave()
                }.start()
            }
            try #require(group.wait(timeout: .now() + 60) == .success, "\(sessions) sessions never finished")
            let log = events.withLock { $0 }
            let started = log.filter(\.isStart).map(\.label)
            #expect(started.sorted() == given.flatMap { $0.map(Self.label) }.sorted(), "\(sessions) sessions")
            var running: Set<String> = []
            var done: Set<String> = []
            for event in log {
                if event.isStart {
                    #expect(!running.contains(event.table), "\(event.label) beside another job of its table")
                    running.insert(event.table)
                    if event.label.hasSuffix(" analyze") {
                        let indexes = given.joined().filter {
                            $0.schema + "." + $0.table == event.table && $0.kind != .analyze
                        }
                        #expect(indexes.allSatisfy { done.contains(Self.label($0)) }, "\(event.label) before indexes")
                    }
                } else {
                    running.remove(event.table)
                    done.insert(event.label)
                }
            }
            // Jobs of the session that gave last were run by the others too.
            #expect(Set(log.filter { $0.label.hasPrefix("s\(sessions - 1).") }.map(\.session)).count > 1)
        }
    }

    /// A progress display shows the job that has run longest (what the others wait for), numbered among the
    /// import's builds; between two jobs, the one started last.
    @Test func theJobRunningLongestIsTheOneShown() throws {
        let work = FinishingWork(sessions: 1, indexCount: 5)
        #expect(work.currentStep == nil)
        work.give(
            Self.jobs("s1", "timeline", size: 900, indexes: ["timeline_pkey"])
                + Self.jobs("s1", "posts", size: 300, indexes: ["posts_pkey"]))
        let first = try #require(work.next())
        let second = try #require(work.next())
        #expect(work.currentStep == .buildingIndex(name: "timeline_pkey", number: 1, count: 5))
        work.finish(first)
        #expect(work.currentStep == .buildingIndex(name: "posts_pkey", number: 2, count: 5))
        work.finish(second)
        #expect(work.currentStep == .buildingIndex(name: "posts_pkey", number: 2, count: 5))
        let third = try #require(work.next())
        #expect(work.currentStep == .analyzing(tables: ["timeline"]))
        work.finish(third)
    }

    /// A failure stops everyone: a session waiting for another's jobs, and one that never gave any, get none.
    @Test func afterAStopNobodyGetsAJob() throws {
        let work = FinishingWork(sessions: 2, indexCount: 1)
        work.give(Self.jobs("s0", "users", size: 1, indexes: ["users_pkey"]))
        let job = try #require(work.next())
        let waiting = DispatchSemaphore(value: 0)
        let got = Mutex<Job??>(.none)
        Thread {
            // The index is building: the ANALYZE waits for it, and the other session has not given yet.
            let next = work.next()
            got.withLock { $0 = .some(next) }
            waiting.signal()
        }.start()
        Thread.sleep(forTimeInterval: 0.05)
        #expect(got.withLock { $0 } == nil, "a job given while its table was busy")
        work.giveNone()
        work.stop()
        try #require(waiting.wait(timeout: .now() + 10) == .success)
        #expect(got.withLock { $0 } == .some(nil))
        work.finish(job)
        #expect(work.next() == nil)
    }
}
