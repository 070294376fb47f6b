import FirebaseTree
import Foundation
import PostgresTestSupport
import Synchronization
import Testing
import TreeTestSupport

@testable import Storage

/// Every reader beside every writer: the reader starts while the writer holds its locks (its work done, its
/// transaction not yet committed, or, for VACUUM FULL, part-way through its tables), and must answer as the store
/// was before the writer or as it is after it, or refuse in the documented way. Readers are synchronised with the
/// writer on `pg_stat_activity` (the reader waits for a lock, or has finished), never on sleep.
@Suite("Reads beside writers: before or after, never between")
struct ReadSnapshotTests {
    /// The store each pair starts from: a generated tree with every check's violations planted, and the keys the
    /// readers and writers name.
    struct Base: Sendable {
        /// The database the pairs copy; nil for a store elsewhere (a Citus cluster's), which is not copied.
        let database: TestDatabase?
        let json: String
        let uid: String
        let chatOwner: String
        let chatKey: String
        /// Two chats of the same two members, as `chat merge KEEP DROP` takes them.
        let duplicateChats: (keep: String, drop: String)

        static let shared: Result<Base, any Error> = Result {
            let database = try TestPostgres.makeDatabase()
            let store = Store(connection: try database.connect())
            return try importing(into: store, database: database)
        }

        /// Imports the base tree into `store` and finds the keys the readers and writers name.
        static func importing(into store: Store, database: TestDatabase?) throws -> Base {
            let json = try generate(GeneratorOptions(users: 14, seed: 11, plantsAnomalies: true)).json
            try importJSON(json, into: store)
            let uid = try store.connection.query("SELECT owner_uid FROM posts ORDER BY owner_uid LIMIT 1")[0]
                .decode(String.self, at: 0)
            let chat = try store.connection.query("SELECT uid, chat_key FROM chats ORDER BY uid, chat_key LIMIT 1")[0]
            let duplicates = try store.connection.query(
                """
                SELECT array_agg(chat_key ORDER BY chat_key) FROM chat_members WHERE cardinality(members) = 2
                GROUP BY members HAVING count(*) > 1 ORDER BY 1 LIMIT 1
                """
            )[0].decode([String].self, at: 0)
            return Base(
                database: database, json: json, uid: uid, chatOwner: try chat.decode(String.self, at: 0),
                chatKey: try chat.decode(String.self, at: 1), duplicateChats: (duplicates[1], duplicates[0]))
        }
    }

    /// The tree a whole-tree import replaces the base with.
    static let replacement = Result { try generate(GeneratorOptions(users: 9, seed: 12, plantsAnomalies: true)).json }

    /// A command that reads the store, and how its answer is written down for comparison.
    enum Reader: String, CaseIterable, Sendable {
        case export, exportPath = "export --path", getLastByKey = "get --order-by-key --limit-to-last"
        case getFirstByChild = "get --order-by child --limit-to-first", getShallow = "get --shallow"
        case getKeyRange = "get --order-by-key --start-at --end-at", getEqual = "get --order-by child --equal-to"
        case getLastByValue = "get --order-by value --limit-to-last"
        case verify, check, checkWaiting = "check --wait", status, users, posts, timeline, chats, messages
        case messagesFollow = "messages --follow"
        case userShow = "user show"
        /// Readers that write what they read: they must run after the writer, on what it left.
        case checkFix = "check --fix", backfillLikeCounts = "backfill like-counts", chatMerge = "chat merge --all"

        var writes: Bool { [.checkFix, .backfillLikeCounts, .chatMerge].contains(self) }

        /// The reader's answer on `store`, as text.
        func read(_ store: Store, _ base: Base) throws -> String {
            func exported(at path: [String], query: TreeQuery? = nil, shallow: Bool = false) throws -> String {
                var bytes: [UInt8] = []
                if let query {
                    _ = try store.exportTree(at: path, query: query) { bytes.append(contentsOf: $0) }
                } else {
                    _ = try store.exportTree(at: path, options: ExportOptions(shallow: shallow)) {
                        bytes.append(contentsOf: $0)
                    }
                }
                return String(decoding: bytes, as: UTF8.self)
            }
            func counts(_ results: [CheckResult]) -> String {
                results.map { "\($0.check.rawValue)=\($0.violations) \($0.examples)" }.joined(separator: "\n")
            }
            func changes(_ report: RepairReport) -> String {
                report.changes.map { "\($0.table) \($0.action.rawValue) \($0.rows)" }.joined(separator: "\n")
            }
            let wait = MaintenanceWait(seconds: 60)
            switch self {
            case .export: return try exported(at: [])
            case .exportPath: return try exported(at: ["posts", base.uid])
            case .getLastByKey: return try exported(at: ["postLikes"], query: TreeQuery(order: .key, limitToLast: 5))
            case .getFirstByChild:
                return try exported(at: ["users"], query: TreeQuery(order: .child(["username"]), limitToFirst: 3))
            case .getShallow: return try exported(at: ["users"], shallow: true)
            case .getKeyRange:
                return try exported(
                    at: ["timeline", base.uid], query: TreeQuery(order: .key, start: .string("-K"), end: .string("-L")))
            case .getEqual:
                return try exported(
                    at: ["posts", base.uid],
                    query: TreeQuery(order: .child(["poster", "uid"]), equal: .string(base.uid)))
            case .getLastByValue:
                return try exported(at: ["followers", base.uid], query: TreeQuery(order: .value, limitToLast: 2))
            case .verify:
                let report = try store.verify(source: MemorySource(base.json))
                return "\(report.counts.sorted { $0.key.rawValue < $1.key.rawValue }) \(report.differences.prefix(20))"
            case .check: return counts(try store.check(examples: 3))
            case .checkWaiting: return counts(try store.check(examples: 3, wait: wait))
            case .status: return "\(try store.status().tableRows)"
            case .users: return "\(try store.users(limit: 1000))"
            case .posts: return "\(try store.posts(of: base.uid, limit: 1000))"
            case .timeline: return "\(try store.timeline(of: base.uid, limit: 1000))"
            case .chats: return "\(try store.chats(of: base.chatOwner, limit: 1000))"
            case .messages: return "\(try store.messages(in: base.chatKey, limit: 1000))"
            case .userShow: return "\(String(describing: try store.user(base.uid)))"
            case .messagesFollow:
                // What it reads before it listens: whether the chat is there.
                try store.watchMessages(in: base.chatKey).stop()
                return "following"
            case .checkFix:
                let fix = try store.checkAndFix(examples: 3, wait: wait)
                return counts(fix.before) + "\n" + fix.repairs.map(changes).joined(separator: "\n") + "\n"
                    + counts(fix.after)
            case .backfillLikeCounts:
                var options = RepairOptions()
                options.waitSeconds = 60
                return changes(try store.repair(.likeCounts, options: options))
            case .chatMerge: return changes(try store.mergeDuplicateChats(keeping: .newest, waitSeconds: 60))
            }
        }

        /// `read`, with an answer that names something the store does not hold (a user a writer removed) as
        /// text too: after the writer, that is the right answer.
        func answer(_ store: Store, _ base: Base) throws -> String {
            do {
                return try read(store, base)
            } catch let error as StorageError where error.kind == .notFound {
                return "not found: \(error.message)"
            }
        }

        /// Whether `error` is the refusal this reader documents for a store that another maintenance run holds
        /// (`writer`): a repair, not a whole-tree import that loads beside the store, which check reads beside.
        func isDocumentedRefusal(_ error: any Error, beside writer: Writer? = nil) -> Bool {
            guard self == .check, writer?.loadsBesideTheStore != true, let error = error as? StorageError else {
                return false
            }
            return error.sqlState == .lockNotAvailable && error.message.contains("is running on this database")
        }
    }

    /// A command that changes the store.
    enum Writer: String, CaseIterable, Sendable {
        case importWhole = "import", importReading = "import (still reading its file)"
        case importMerge = "import --mode merge", importAt = "import --at"
        case setRoot = "set /", setLeaf = "set (a leaf)", update, push, remove, removeRoot = "remove /"
        case checkFix = "check --fix", backfillTimelines = "backfill timelines", chatMerge = "chat merge --all"
        case chatMergeOne = "chat merge KEEP DROP", vacuumFull = "vacuum --full"

        /// Whether it is a whole-tree import that loads beside the store (readers, check too, read as before).
        var loadsBesideTheStore: Bool { self == .importWhole || self == .importReading }

        /// Does the writer's work on `store`.
        func write(_ store: Store, _ base: Base) throws {
            switch self {
            case .importWhole, .importReading: try importJSON(try replacement.get(), into: store)
            case .importMerge:
                try importJSON(
                    #"{"users": {"zed": {"username": "zed"}}, "postLikes": null, "extra": 1}"#, into: store,
                    options: ImportOptions(mode: .merge))
            case .importAt:
                try importJSON(
                    #"{"-Pnew": {"image_url": "x", "like_count": 0}}"#, into: store,
                    options: ImportOptions(at: ["posts", base.uid]))
            case .setRoot: _ = try store.write(.set(json: try replacement.get()), at: [])
            case .setLeaf: _ = try store.write(.set(json: #""renamed""#), at: ["users", base.uid, "username"])
            case .update:
                _ = try store.write(.update(json: #"{"username": "u2", "bio": "b"}"#), at: ["users", base.uid])
            case .push:
                _ = try store.write(
                    .push(json: #"{"text": "hi", "sender": "\#(base.chatOwner)"}"#), at: ["messages", base.chatKey])
            case .remove: _ = try store.write(.remove, at: ["postLikes"])
            case .removeRoot: _ = try store.write(.remove, at: [], allowsEmptying: true)
            case .checkFix: _ = try store.checkAndFix()
            case .backfillTimelines: _ = try store.repair(.timelines)
            case .chatMerge: _ = try store.mergeDuplicateChats(keeping: .newest)
            case .chatMergeOne: _ = try store.mergeChats(keep: base.duplicateChats.keep, drop: base.duplicateChats.drop)
            case .vacuumFull: _ = try store.vacuum(full: true)
            }
        }

        /// Runs the writer on `database` so that it holds its locks while `whileHeld` runs, then lets it finish.
        func hold(_ database: TestDatabase, _ base: Base, whileHeld: () throws -> Void) throws {
            let store = Store(connection: try database.connect())
            if self == .importReading { return try holdReading(store, whileHeld: whileHeld) }
            guard self == .vacuumFull else {
                // The writer's own transaction becomes a savepoint of this one, which commits after `whileHeld`.
                return try store.connection.withTransaction {
                    try write(store, base)
                    try whileHeld()
                }
            }
            // VACUUM runs outside transactions, a table at a time: stop it part-way, at /messages, with a lock
            // another session holds there.
            let blocker = Store(connection: try database.connect())
            let pid = try backendPID(store)
            nonisolated(unsafe) let vacuuming = store
            let outcome = Mutex<(any Error)?>(nil)
            let finished = DispatchSemaphore(value: 0)
            try blocker.connection.withTransaction {
                try blocker.connection.execute("LOCK TABLE messages IN ACCESS SHARE MODE")
                Thread.detachNewThread {
                    do { try self.write(vacuuming, base) } catch { outcome.withLock { $0 = error } }
                    finished.signal()
                }
                try #require(
                    try waitUntil(pid, on: database, isWaitingOr: { false }), "VACUUM FULL did not reach /messages")
                try whileHeld()
            }
            #expect(finished.wait(timeout: .now() + 60) == .success)
            if let error = outcome.withLock({ $0 }) { throw error }
        }
    }

    /// A whole-tree import that has truncated the tables and loaded half its file, and waits for the rest.
    private static func holdReading(_ store: Store, whileHeld: () throws -> Void) throws {
        let gate = GatedSource(try replacement.get())
        nonisolated(unsafe) let importing = store
        let outcome = Mutex<(any Error)?>(nil)
        let finished = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            do { _ = try importing.importTree(from: gate) } catch { outcome.withLock { $0 = error } }
            finished.signal()
        }
        try #require(gate.reached.wait(timeout: .now() + 60) == .success, "the import never read half its file")
        defer {
            gate.open.signal()
            #expect(finished.wait(timeout: .now() + 60) == .success)
            if let error = outcome.withLock({ $0 }) { Issue.record(error, "the import failed") }
        }
        try whileHeld()
    }

    static func backendPID(_ store: Store) throws -> Int {
        try store.connection.query("SELECT pg_backend_pid()")[0].decode(Int.self, at: 0)
    }

    /// Waits until the session `pid` of `database` waits for a lock, or `isDone` says so; false after 30 s.
    static func waitUntil(_ pid: Int, on database: TestDatabase, isWaitingOr isDone: () -> Bool) throws -> Bool {
        try waitUntil(pid, control: Store(connection: try database.connect()), isWaitingOr: isDone)
    }

    /// Waits until the session `pid` waits for a lock, as `control`'s server sees it, or `isDone` says so; false
    /// after 30 s.
    static func waitUntil(_ pid: Int, control: Store, isWaitingOr isDone: () -> Bool) throws -> Bool {
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            if isDone() { return true }
            let waits = try control.connection.query(
                "SELECT wait_event_type = 'Lock' FROM pg_stat_activity WHERE pid = \(pid)"
            ).first?.decode(Bool?.self, at: 0)
            if waits == true { return true }
            Thread.sleep(forTimeInterval: 0.01)
        }
        return false
    }

    /// What a reader gives on a copy of the base store after `writer` ran there (alone, committed), or on the
    /// base store as it is.
    static func quietRead(_ reader: Reader, after writer: Writer?, _ base: Base) throws -> String {
        let database = try TestPostgres.makeDatabase(copying: try #require(base.database))
        if let writer { try writer.write(Store(connection: try database.connect()), base) }
        return try reader.answer(Store(connection: try database.connect()), base)
    }

    /// Each reader's answer on the base store.
    static let answersBefore: Result<[Reader: String], any Error> = Result {
        let base = try Base.shared.get()
        return try Dictionary(uniqueKeysWithValues: Reader.allCases.map { ($0, try quietRead($0, after: nil, base)) })
    }

    @Test(arguments: Writer.allCases)
    func everyReaderBesideTheWriter(_ writer: Writer) throws {
        let base = try Base.shared.get()
        for reader in Reader.allCases {
            let before = try #require(try Self.answersBefore.get()[reader])
            let database = try TestPostgres.makeDatabase(copying: try #require(base.database))
            let readerStore = Store(connection: try database.connect())
            let readerPID = try Self.backendPID(readerStore)
            nonisolated(unsafe) let reading = readerStore
            let outcome = Mutex<Result<String, any Error>?>(nil)
            let finished = DispatchSemaphore(value: 0)
            try writer.hold(database, base) {
                Thread.detachNewThread {
                    let answer = Result { try reader.answer(reading, base) }
                    outcome.withLock { $0 = answer }
                    finished.signal()
                }
                let started = try Self.waitUntil(readerPID, on: database) { outcome.withLock { $0 != nil } }
                #expect(started, "\(reader.rawValue) beside \(writer.rawValue): neither waited nor finished")
            }
            try #require(finished.wait(timeout: .now() + 120) == .success, "\(reader.rawValue) never finished")
            let after =
                reader.writes
                ? try Self.quietRead(reader, after: writer, base)
                : try reader.answer(Store(connection: try database.connect()), base)
            switch try #require(outcome.withLock { $0 }) {
            case .success(let answer) where writer == .importReading && !reader.writes:
                // The import is still reading its file: every read answers at once, from the store as it was.
                #expect(
                    answer == before,
                    "\(reader.rawValue) beside \(writer.rawValue) answered other than before: \(firstDifference(answer, before))"
                )
            case .success(let answer):
                #expect(
                    answer == before || answer == after,
                    """
                    \(reader.rawValue) beside \(writer.rawValue) answered neither as before nor as after:
                    \(firstDifference(answer, after))
                    """)
            case .failure(let error):
                #expect(
                    reader.isDocumentedRefusal(error, beside: writer),
                    "\(reader.rawValue) beside \(writer.rawValue) failed: \(error)")
            }
        }
    }
}
