import Foundation
internal import PostgresClient

/// The last mirror's progress, as it wrote it in `mirror_progress` (migration 0025): what `status` shows.
public struct MirrorStatus: Sendable, Equatable {
    /// `running`, or how its stream ended: `ended`, `cancelled`, `auth_revoked`, `failed`.
    public var state: String
    /// Whether its session still runs (a `running` mirror whose session is gone was killed).
    public var isAlive: Bool
    /// Its server process.
    public var pid: Int
    /// When it started.
    public var startedAt: Date
    /// Where the streamed location is in the store.
    public var at: String
    /// Events applied and transactions committed.
    public var eventsApplied: Int
    /// Transactions committed.
    public var transactions: Int
    /// When the newest applied event was read.
    public var lastEventAt: Date?
    /// When the stream last sent anything.
    public var lastHeardAt: Date?
    /// Seconds from reading its newest event to writing it, at the last transaction.
    public var secondsBehind: Double?
    /// When the row was last written.
    public var updatedAt: Date
}

/// Writes and reads `mirror_progress`.
struct MirrorProgressRow {
    let connection: StoreConnection

    /// The row of a mirror starting now, replacing the last one's.
    func start(at path: [String]) throws {
        let now = Date().timeIntervalSince1970
        try connection.withTransaction {
            try connection.execute("DELETE FROM mirror_progress")
            try connection.execute(
                """
                INSERT INTO mirror_progress (pid, started_at, at_path, state, updated_at)
                VALUES (pg_backend_pid(), to_timestamp(\(now)), \("/" + path.joined(separator: "/")), 'running',
                    to_timestamp(\(now)))
                """)
        }
    }

    /// Where the mirror stands, in the transaction that applied its events (or one of its own).
    func update(_ progress: MirrorProgress, state: String = "running") throws {
        try connection.execute(
            """
            UPDATE mirror_progress SET state = \(state), events_applied = \(progress.eventsApplied),
                transactions = \(progress.transactions),
                last_event_at = to_timestamp(\(progress.lastEventRead?.timeIntervalSince1970)),
                last_heard_at = to_timestamp(\(progress.lastHeard?.timeIntervalSince1970)),
                seconds_behind = \(progress.lastEventRead.map { Date().timeIntervalSince($0) }),
                updated_at = to_timestamp(\(Date().timeIntervalSince1970))
            WHERE pid = pg_backend_pid()
            """)
    }

    /// The last mirror's row, nil when no mirror ever ran.
    func read() throws -> MirrorStatus? {
        try connection.query(
            """
            SELECT m.state, EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.pid = m.pid LIMIT 1), m.pid,
                extract(epoch FROM m.started_at)::float8, m.at_path, m.events_applied, m.transactions,
                extract(epoch FROM m.last_event_at)::float8, extract(epoch FROM m.last_heard_at)::float8,
                m.seconds_behind, extract(epoch FROM m.updated_at)::float8
            FROM mirror_progress m
            """
        ).first.map { row in
            MirrorStatus(
                state: try row.decode(String.self, at: 0), isAlive: try row.decode(Bool.self, at: 1),
                pid: try row.decode(Int.self, at: 2),
                startedAt: Date(timeIntervalSince1970: try row.decode(Double.self, at: 3)),
                at: try row.decode(String.self, at: 4), eventsApplied: try row.decode(Int.self, at: 5),
                transactions: try row.decode(Int.self, at: 6),
                lastEventAt: try row.decode(Double?.self, at: 7).map(Date.init(timeIntervalSince1970:)),
                lastHeardAt: try row.decode(Double?.self, at: 8).map(Date.init(timeIntervalSince1970:)),
                secondsBehind: try row.decode(Double?.self, at: 9),
                updatedAt: Date(timeIntervalSince1970: try row.decode(Double.self, at: 10)))
        }
    }
}
