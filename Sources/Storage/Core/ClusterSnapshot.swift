import Foundation
internal import PostgresClient

/// On Citus, a transaction's snapshots on the coordinator and on every worker taken at one instant, so that a read
/// sees each distributed write whole or not at all, as one server's snapshot does.
///
/// Citus has no distributed snapshot: each worker's part of a transaction takes its own when it joins, and a
/// statement that reaches many shards opens more connections as it goes (up to
/// `citus.max_adaptive_executor_pool_size` a worker), each joining later with a later snapshot. An export beside
/// `follow`s measured that (five of six exports of a 20,000-user store showed a follow on one side and not the
/// other). So a distributed read:
///
/// 1. keeps one connection a worker for the whole transaction (`SET LOCAL
///    citus.max_adaptive_executor_pool_size = 1`; Citus then reuses the connection that joined first);
/// 2. takes a SHARE lock on `pg_dist_transaction` on a session of its own, the barrier: Citus records each
///    two-phase commit there (ROW EXCLUSIVE) and holds that lock until its last worker has committed, so the
///    barrier waits for the commits in flight and holds back new ones (reads never wait for it: SHARE does not
///    conflict with SHARE);
/// 3. runs the statement that reaches every worker (the read's `LOCK TABLE`, which Citus sends to every worker
///    over the transaction's connections, each taking its snapshot as it joins; opened before the transaction, so
///    that the barrier is held about a millisecond) and the coordinator's first query;
/// 4. ends the barrier's transaction.
///
/// The lock needs UPDATE, DELETE or TRUNCATE on `pg_dist_transaction` (its owner, a superuser, has them), or EXECUTE
/// on `hold_distributed_commits()` (migration 0021), which takes it with its owner's privileges. A role with
/// neither still takes every worker's snapshot in one statement (steps 1 and 3), but a distributed commit that
/// ends within that statement can be seen on one worker and not on another: exports beside a stream of `follow`s
/// as such a role showed half of one in one of five. Writes coordinated by a worker (an app connected to the
/// workers) record their commits there, not on the coordinator, and are not held back.
struct ClusterSnapshot {
    /// The connection whose transaction reads.
    let connection: StoreConnection
    /// `lock_timeout` of the reading session, which the barrier's wait keeps.
    let lockTimeout: String

    /// Keep the transaction on one connection a worker (`force_max_query_parallelization` would open one a shard
    /// whatever the pool's size); utility statements, so that no snapshot is taken yet.
    static let oneConnectionPerWorker: [Query] = [
        "SET LOCAL citus.max_adaptive_executor_pool_size = 1", "SET LOCAL citus.force_max_query_parallelization = off",
    ]
    /// Held while the snapshots are taken.
    static let barrierLock: Query = "LOCK TABLE pg_catalog.pg_dist_transaction IN SHARE MODE"

    /// The snapshot for `connection`'s next transaction, or nil on one server (or a Citus coordinator whose tables
    /// are not distributed). Asked before the transaction begins: a query in it would take its snapshot.
    static func ifDistributed(on connection: StoreConnection) throws -> ClusterSnapshot? {
        guard try Distribution.isDistributed(on: connection) else { return nil }
        let lockTimeout = try connection.query("SELECT current_setting('lock_timeout')")[0].decode(String.self, at: 0)
        // A new session's barrier opens on another thread while the worker connections open here: each takes
        // milliseconds (a coordinator backend's start, a connection a worker).
        connection.commitBarrier.prepare()
        try openWorkerConnections(on: connection)
        return ClusterSnapshot(connection: connection, lockTimeout: lockTimeout)
    }

    /// Has the coordinator open its connections to the workers (which it keeps between transactions) before the
    /// barrier: opening them took 13-16 ms of the read's `LOCK TABLE` in a new session, against 0.6-0.9 ms once
    /// open, and distributed commits wait for as long as the barrier is held. A `LOCK TABLE` reaches every
    /// worker; without waiting, since a read that must wait for the tables does so later, saying for whom.
    private static func openWorkerConnections(on connection: StoreConnection) throws {
        do {
            try connection.withTransaction(readOnly: true) {
                try connection.execute("LOCK TABLE users IN ACCESS SHARE MODE NOWAIT")
            }
        } catch let error as StorageError where error.isLockRefusal {}
    }

    /// Waits for the tables a read (or a sync) found held, before it reads again: runs `statements` (a `LOCK
    /// TABLE` that waits, up to `lock_timeout`) in a transaction of their own, with the lock taken on the
    /// coordinator alone. Citus would take it on the workers first and hold it there while it waits on the
    /// coordinator, where a whole-tree import's switch holds the tables while its changes to them wait on the
    /// workers for that very lock. When nothing held them on the coordinator, a writer holds them on the workers
    /// only (Citus locks the workers one after the other, then the coordinator): the read waits a moment before
    /// it asks again, and gives up once `timeout` (the session's `lock_timeout` unless given; 0: never) has passed
    /// since `firstRefusal`, as a wait would.
    func waitForTables(
        _ statements: [Query], readOnly: Bool, timeout: String? = nil,
        since firstRefusal: inout ContinuousClock.Instant?
    ) throws {
        let clock = ContinuousClock()
        let started = clock.now
        try connection.withTransaction(readOnly: readOnly) {
            try connection.execute(Self.coordinatorOnly)
            for statement in statements { try connection.execute(statement) }
        }
        guard clock.now - started < .milliseconds(10) else { return }
        let since = firstRefusal ?? started
        firstRefusal = since
        let limit = timeout ?? lockTimeout
        let seconds = try connection.query("SELECT extract(epoch FROM \(limit)::interval)::float8")[0]
            .decode(Double.self, at: 0)
        if seconds > 0, clock.now - since > .seconds(seconds) {
            throw StorageError(
                .server, "waited \(limit) (lock_timeout) for a lock another transaction holds on the workers",
                sqlState: .lockNotAvailable,
                hint: "Nothing was read. Try again; pg_locks on the workers shows who holds the tables."
            ).remedied(.waitLonger)
        }
        Thread.sleep(forTimeInterval: 0.05)
    }

    /// Keeps the transaction's next `LOCK TABLE`s on the coordinator: Citus sends one to the workers unless DDL
    /// propagation is off.
    static let coordinatorOnly: Query = "SELECT set_config('citus.enable_ddl_propagation', 'off', true)"

    /// Runs `reachEveryWorker` (a statement Citus sends to every worker in the transaction, which takes no snapshot
    /// on the coordinator) and takes the coordinator's snapshot, while no distributed commit can be half done:
    /// the first thing a transaction does.
    func take(reachingEveryWorker reachEveryWorker: () throws -> Void) throws {
        for setting in Self.oneConnectionPerWorker { try connection.execute(setting) }
        let barrier = try connection.commitBarrier.hold(lockTimeout: lockTimeout)
        defer { barrier?.release() }
        try reachEveryWorker()
        _ = try connection.query("SELECT 1")
    }
}

/// The session that holds `pg_dist_transaction` while a distributed read takes its snapshots (`ClusterSnapshot`),
/// opened beside the store's connection on first use and kept for its life.
final class CommitBarrier {
    /// Opens the barrier's session.
    private let open: @Sendable () throws -> StoreConnection
    /// The barrier's session, once opened.
    private var session: StoreConnection?
    /// The session `prepare` is opening on another thread, for the next `hold`.
    private var opening: OpeningSession?
    /// How many of `ways` were refused to this session's role, which takes the first of the others.
    private var refusedWays = 0

    /// The ways to take the barrier's lock, in the order tried: the schema's function (migration 0021), which a
    /// role granted EXECUTE may call, then the lock itself, for a role that may take it but not call the function
    /// (the function's owner lacks the privilege, or the schema predates it).
    static let ways: [Query] = ["SELECT hold_distributed_commits()", ClusterSnapshot.barrierLock]

    /// Whether the role may take the barrier's lock in no way: asked once a session.
    var isRefused: Bool { refusedWays == Self.ways.count }

    init(opening open: @escaping @Sendable () throws -> StoreConnection) {
        self.open = open
    }

    /// Starts opening the barrier's session on another thread when it is not open (nor being opened, nor refused
    /// to this role), so that `hold` finds it open.
    func prepare() {
        guard !isRefused, session?.isConnected != true, opening == nil else { return }
        opening = OpeningSession(open)
    }

    /// Takes the barrier's lock, waiting at most `lockTimeout` for the distributed commits in flight; nil where the
    /// role may not take it.
    func hold(lockTimeout: String) throws -> HeldBarrier? {
        while !isRefused {
            if session?.isConnected != true {
                let pending = opening
                opening = nil
                // A session the other thread could not open is tried again here: its failure may be past.
                session = try (try? pending?.session()) ?? open()
            }
            guard let session else { return nil }
            do {
                try session.execute("BEGIN")
                try session.execute("SELECT set_config('lock_timeout', \(lockTimeout), true)")
                try session.execute(Self.ways[refusedWays])
                return HeldBarrier(session: session)
            } catch let error as StorageError {
                if session.isConnected { session.withoutCancels { _ = try? session.execute("ROLLBACK") } }
                if error.sqlState == .insufficientPrivilege || error.sqlState == .undefinedFunction {
                    refusedWays += 1
                    continue
                }
                var error = error
                error.context = "taking a distributed read's snapshot (the barrier on pg_dist_transaction)"
                guard error.sqlState == .lockNotAvailable else { throw error }
                // Not "lock timeout", which a transaction's wait rewords as a wait for tables; and, as that wait says
                // it, without the statement that waited (the operator did not write it).
                error.message = "waited \(lockTimeout) (lock_timeout) for distributed commits to end"
                error.statement = nil
                error.hint =
                    "A distributed commit held pg_dist_transaction longer than lock_timeout (\(lockTimeout)); "
                    + "pg_locks shows who. Nothing was read."
                throw error.remedied(.waitLonger)
            }
        }
        return nil
    }
}

/// The barrier's lock, held until `release`.
struct HeldBarrier {
    /// The barrier's session, in a transaction holding the lock.
    let session: StoreConnection

    /// Ends the barrier's transaction, letting the distributed commits it held back go on; after a cancelled read
    /// too, while Ctrl-C's requests keep coming (a barrier left held would hold every distributed commit back).
    func release() {
        session.withoutCancels {
            if (try? session.execute("COMMIT")) == nil, session.isConnected { _ = try? session.execute("ROLLBACK") }
        }
    }
}

/// A session being opened on a thread of its own.
private final class OpeningSession: @unchecked Sendable {
    private let opened = DispatchSemaphore(value: 0)
    /// Set before `opened` is signalled.
    private var result: Result<StoreConnection, any Error> = .failure(CancellationError())

    init(_ open: @escaping @Sendable () throws -> StoreConnection) {
        Thread.detachNewThread { [self] in
            result = Result { try open() }
            opened.signal()
        }
    }

    /// The session, once open; the error that opening it threw.
    func session() throws -> StoreConnection {
        opened.wait()
        opened.signal()
        return try result.get()
    }
}
