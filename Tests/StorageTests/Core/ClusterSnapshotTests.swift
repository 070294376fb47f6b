import Foundation
import PostgresClient
import PostgresTestSupport
import Synchronization
import Testing

@testable import Storage

/// Reads of a distributed store see one instant on every node (`ClusterSnapshot`): beside distributed writes, behind
/// a distributed commit in flight, behind an import's locks, and for a role that may not take the barrier.
@Suite(
    "Reads of one instant on a Citus cluster", .serialized,
    .enabled(if: TestCitus.isAvailable, Comment(rawValue: "Citus: " + (TestCitus.unavailableReason ?? "available"))))
struct ClusterSnapshotTests {
    /// Users whose follows the writer toggles, far apart in hash so that the two sides of a follow lie on
    /// different workers for most pairs.
    static let pairs = (1...12).map { ("snap\($0)a", "snap\($0)b") }

    /// A store of 300 generated users and the pairs' users, distributed at Citus's default shard count (32: a
    /// statement's tasks are enough for Citus to open more connections as it goes, as on a real store).
    func makeStore(coordinatorInMetadata: Bool = true) throws -> (store: Store, database: CitusDatabase) {
        let database = try TestCitus.makeDatabase(coordinatorInMetadata: coordinatorInMetadata)
        let store = Store(connection: try database.connect())
        try store.migrate()
        try importJSON(try generate(GeneratorOptions(users: 300, seed: 5)).json, into: store)
        for (a, b) in Self.pairs {
            _ = try store.addUser(uid: a, username: a)
            _ = try store.addUser(uid: b, username: b)
        }
        _ = try store.distribute()
        return (store, database)
    }

    /// The pairs whose follow an export shows on one side only (/following/A/B without /followers/B/A or the
    /// reverse).
    static func halfFollows(in json: String) throws -> [String] {
        let tree = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any] ?? [:]
        let following = tree["following"] as? [String: [String: Any]] ?? [:]
        let followers = tree["followers"] as? [String: [String: Any]] ?? [:]
        return Self.pairs.compactMap { a, b in
            (following[a]?[b] != nil) == (followers[b]?[a] != nil) ? nil : "\(a) -> \(b)"
        }
    }

    /// Exports taken while another session follows and unfollows, each in one transaction over two workers, show
    /// every follow on both sides or on neither. (Before: five exports of six of a 20,000-user store showed some
    /// on one side.) Each check of the same kind sees no pair on one side either.
    @Test func readsBesideDistributedWritesSeeEachWriteWhole() throws {
        let (store, database) = try makeStore()
        let writer = Store(connection: try database.connect())
        let stop = Atomic(false)
        let written = Atomic(0)
        let failure = Mutex<(any Error)?>(nil)
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) let writing = writer
        Thread.detachNewThread {
            defer { done.signal() }
            do {
                while !stop.load(ordering: .relaxed) {
                    for (a, b) in Self.pairs { _ = try writing.follow(a, b) }
                    for (a, b) in Self.pairs { _ = try writing.unfollow(a, b) }
                    written.add(2 * Self.pairs.count, ordering: .relaxed)
                }
            } catch {
                failure.withLock { $0 = error }
            }
        }
        var stopped = false
        func stopWriter() {
            guard !stopped else { return }
            stopped = true
            stop.store(true, ordering: .relaxed)
            done.wait()
        }
        defer { stopWriter() }
        var seen = 0
        for round in 0..<6 {
            // Half of them over two sessions, each reading the shards from the workers in the same snapshot.
            var bytes: [UInt8] = []
            let report = try store.exportTree(options: ExportOptions(jobs: 1 + round % 2)) {
                bytes.append(contentsOf: $0)
            }
            let json = String(decoding: bytes, as: UTF8.self)
            #expect(report.shardNodes == 2 && report.sessions == 1 + round % 2, "\(report)")
            #expect(try Self.halfFollows(in: json) == [], "an export saw a follow on one side only")
            seen += Self.pairs.count { a, b in json.contains("\"\(a)\":{\"\(b)\"") }
            let asymmetric = try store.check([.followAsymmetric], examples: 1000)[0].examples
            #expect(asymmetric.filter { $0.contains("snap") } == [], "a check saw a follow on one side only")
            // status's counts are of one instant too: both sides alike.
            let rows = Dictionary(uniqueKeysWithValues: try store.status().tableRows.map { ($0.table, $0.rows) })
            #expect(rows["following"] != nil && rows["following"] == rows["followers"], "status: \(rows)")
        }
        stopWriter()
        #expect(failure.withLock { $0 } == nil)
        // The reads ran beside the writes: the writer wrote meanwhile, and some export caught follows.
        #expect(written.load(ordering: .relaxed) > 0)
        #expect(seen > 0, "no export caught a follow: the test did not test")
    }

    /// A read waits for a distributed commit in flight (which holds `pg_dist_transaction` until its last worker
    /// committed), and gives up after `lock_timeout`, saying why, with nothing read.
    @Test func aReadWaitsForADistributedCommitInFlight() throws {
        let (store, database) = try makeStore()
        let committing = Store(connection: try database.connect())
        try committing.connection.execute("BEGIN")
        try committing.connection.execute("LOCK TABLE pg_catalog.pg_dist_transaction IN ROW EXCLUSIVE MODE")
        try store.setLockTimeout(.milliseconds(200))
        let error = try #require(throws: StorageError.self) { try exportJSON(store, at: ["users", "snap1a"]) }
        #expect(error.sqlState == .lockNotAvailable)
        #expect(error.remedy == .waitLonger)
        #expect(error.context?.contains("pg_dist_transaction") == true)
        #expect(error.hint?.contains("Nothing was read") == true)
        #expect(error.statement == nil)
        // Let go within the wait: the read goes on when the commit ends.
        try store.setLockTimeout(.seconds(30))
        let release = DispatchWorkItem {
            Thread.sleep(forTimeInterval: 0.3)
            _ = try? committing.connection.execute("COMMIT")
        }
        let started = ContinuousClock.now
        DispatchQueue.global().async(execute: release)
        #expect(try exportJSON(store, at: ["users", "snap1a"]) == #"{"username":"snap1a"}"#)
        #expect(ContinuousClock.now - started >= .milliseconds(250))
        release.wait()
    }

    /// Ctrl-C (the console's cancel requests, again and again until the command ends) stops a read waiting at the
    /// barrier; the barrier's session is left holding nothing, and the next read takes it again.
    @Test func ctrlCStopsAReadWaitingAtTheBarrier() throws {
        let (store, database) = try makeStore()
        let committing = Store(connection: try database.connect())
        _ = try exportJSON(store, at: ["users", "snap1a"])  // The barrier's session is open.
        try committing.connection.execute("BEGIN")
        try committing.connection.execute("LOCK TABLE pg_catalog.pg_dist_transaction IN ROW EXCLUSIVE MODE")
        try store.setLockTimeout(.seconds(60))
        let cancel = try #require(store.makeCanceller())
        let ended = Atomic(false)
        let stopped = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            Thread.sleep(forTimeInterval: 0.3)
            while !ended.load(ordering: .relaxed) {
                cancel()
                Thread.sleep(forTimeInterval: 0.05)
            }
            stopped.signal()
        }
        let started = ContinuousClock.now
        let error = #expect(throws: StorageError.self) {
            defer { ended.store(true, ordering: .relaxed) }
            _ = try exportJSON(store, at: ["users", "snap1a"])
        }
        stopped.wait()
        #expect(error?.sqlState == .queryCanceled, "\(String(describing: error))")
        let waited = ContinuousClock.now - started
        #expect(waited >= .milliseconds(250) && waited < .seconds(10), "waited \(waited)")
        let held = try committing.connection.query(
            """
            SELECT count(*) FROM pg_locks
            WHERE relation = 'pg_catalog.pg_dist_transaction'::regclass AND pid <> pg_backend_pid()
            """)[0].decode(Int.self, at: 0)
        #expect(held == 0, "the barrier's session still holds or waits for the lock")
        try committing.connection.execute("COMMIT")
        #expect(try exportJSON(store, at: ["users", "snap1a"]) == #"{"username":"snap1a"}"#)
        #expect(try store.status().readsHoldDistributedCommits == true)
    }

    /// A read queued behind a transaction that holds the tables and commits on several workers (an import, a root
    /// write) waits without the barrier, which that commit would otherwise wait for: no deadlock, and the read
    /// sees the commit.
    @Test func aReadBehindADistributedWriterHoldingTheTablesSeesItsCommit() throws {
        let (store, database) = try makeStore()
        let users = try Self.behindAWriterRenaming(
            Self.pairs.map(\.0), store: store, database: database
        ) { try exportJSON($0, at: ["users"]) }
        for (a, _) in Self.pairs { #expect(users.contains("\"\(a)\":{\"username\":\"renamed\"}")) }
    }

    /// The same read where the coordinator is not in Citus's metadata (a cluster made by `citus_add_node` alone):
    /// Citus then takes a `LOCK TABLE`'s locks on the workers first, and reports one refused there as its
    /// connection's failure (XX000), which the read takes for the tables being held and waits for, as it does on
    /// the coordinator. (Before, a new session's read failed there.)
    @Test func aReadBehindAWriterHoldingTheTablesOnTheWorkersFirstWaitsAndSeesItsCommit() throws {
        let (store, database) = try makeStore(coordinatorInMetadata: false)
        let newcomer = Store(connection: try database.connect())
        let users = try Self.behindAWriterRenaming(
            Self.pairs.map(\.0), store: newcomer, database: database
        ) { try exportJSON($0, at: ["users"]) }
        for (a, _) in Self.pairs { #expect(users.contains("\"\(a)\":{\"username\":\"renamed\"}")) }
        #expect(try exportJSON(store, at: ["users"]) == users)
    }

    /// A sync compares from a snapshot taken as a read's is (a torn one could write back one side of a follow the
    /// app removed meanwhile): it waits for a distributed commit in flight (up to `lock_timeout`), and behind a
    /// transaction holding the tables it waits without the barrier, then sees that transaction's commit.
    @Test func aSyncTakesItsSnapshotAsReadsDo() throws {
        let (store, database) = try makeStore()
        let renamed = try exportJSON(store).replacingOccurrences(
            of: #""snap1a":{"username":"snap1a"}"#, with: #""snap1a":{"username":"synced"}"#)
        let committing = Store(connection: try database.connect())
        try committing.connection.execute("BEGIN")
        try committing.connection.execute("LOCK TABLE pg_catalog.pg_dist_transaction IN ROW EXCLUSIVE MODE")
        try store.setLockTimeout(.milliseconds(200))
        let error = try #require(throws: StorageError.self) { try store.sync(opening: { MemorySource(renamed) }) }
        #expect(error.context?.contains("pg_dist_transaction") == true)
        try committing.connection.execute("COMMIT")
        try store.setLockTimeout(.seconds(30))
        #expect(try store.sync(opening: { MemorySource(renamed) }).rewrites == 1)

        let report = try Self.behindAWriterRenaming(Self.pairs.map(\.1), store: store, database: database) {
            try $0.sync(opening: { MemorySource(renamed) })
        }
        // It compared with the store after the writer's commit, and put the file's names back.
        #expect(report.rewrites == Self.pairs.count)
        #expect(try exportJSON(store) == renamed)
    }

    /// What `work` gives on `store` when it starts while another session holds `users` (ACCESS EXCLUSIVE, as an
    /// import or a root write does) and has renamed `uids`, a change on several workers committed once `work`
    /// waits for it.
    static func behindAWriterRenaming<Result>(
        _ uids: [String], store: Store, database: CitusDatabase, _ work: @escaping (Store) throws -> Result
    ) throws -> Result {
        let writer = Store(connection: try database.connect())
        try writer.connection.execute("BEGIN")
        try writer.connection.execute("LOCK TABLE users IN ACCESS EXCLUSIVE MODE")
        for uid in uids {
            try writer.connection.execute("UPDATE users SET username = 'renamed' WHERE uid = \(uid)")
        }
        let pid = try ReadSnapshotTests.backendPID(store)
        let outcome = Mutex<Swift.Result<Result, any Error>?>(nil)
        nonisolated(unsafe) let working = store
        nonisolated(unsafe) let work = work
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            let result = Swift.Result { try work(working) }
            outcome.withLock { $0 = result }
            done.signal()
        }
        let control = Store(connection: try database.connect())
        #expect(try ReadSnapshotTests.waitUntil(pid, control: control) { outcome.withLock { $0 != nil } })
        try writer.connection.execute("COMMIT")
        #expect(done.wait(timeout: .now() + 60) == .success, "it never finished")
        return try #require(outcome.withLock { $0 }).get()
    }

    /// A role that may only SELECT takes the barrier once granted EXECUTE on `hold_distributed_commits()` (which
    /// locks with its owner's privileges); before, it cannot take it and still reads (with every worker's snapshot
    /// taken in one statement), asking once a session.
    @Test func aRoleThatMayOnlySelectTakesTheBarrierThroughTheFunction() throws {
        let (store, database) = try makeStore()
        let role = "reader_\(database.name)"
        try store.connection.execute(
            script: "CREATE ROLE \(role) LOGIN; GRANT SELECT ON ALL TABLES IN SCHEMA public TO \(role)")
        defer { try? store.connection.execute(script: "DROP OWNED BY \(role); DROP ROLE \(role)") }
        func connectAsRole() throws -> Store {
            Store(connection: try Connection(conninfo: database.coordinator + " user=\(role)"))
        }
        let refused = try connectAsRole()
        #expect(try exportJSON(refused) == (try exportJSON(store)))
        #expect(refused.connection.commitBarrier.isRefused)
        #expect(!store.connection.commitBarrier.isRefused)
        #expect(try refused.status().readsHoldDistributedCommits == false)
        #expect(try store.status().readsHoldDistributedCommits == true)
        #expect(try exportJSON(refused, at: ["users", "snap1a"]) == #"{"username":"snap1a"}"#)

        try store.connection.execute(script: "GRANT EXECUTE ON FUNCTION hold_distributed_commits() TO \(role)")
        let granted = try connectAsRole()
        #expect(try exportJSON(granted, at: ["users", "snap1a"]) == #"{"username":"snap1a"}"#)
        #expect(!granted.connection.commitBarrier.isRefused)
        #expect(try granted.status().readsHoldDistributedCommits == true)
        // It holds commits back as the owner would: a commit in flight keeps it waiting.
        let committing = Store(connection: try database.connect())
        try committing.connection.execute("BEGIN")
        try committing.connection.execute("LOCK TABLE pg_catalog.pg_dist_transaction IN ROW EXCLUSIVE MODE")
        try granted.setLockTimeout(.milliseconds(200))
        let error = try #require(throws: StorageError.self) { try exportJSON(granted, at: ["users"]) }
        #expect(error.context?.contains("pg_dist_transaction") == true)
        try committing.connection.execute("ROLLBACK")
    }
}
