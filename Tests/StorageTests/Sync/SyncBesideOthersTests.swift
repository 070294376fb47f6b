import Foundation
import PostgresTestSupport
import Synchronization
import Testing

@testable import Storage

/// `sync` beside the others: the app's likes, readers, other maintenance, and inputs that fail half-way.
@Suite("sync beside the others")
struct SyncBesideOthersTests {
    /// consistentTree a day later: bob's first post has a caption, carol likes alice's post, bob unfollowed by
    /// carol (both sides), and a message was appended.
    static let newer =
        consistentTree
        .setting("posts/bob/-Pb1/caption", #""edited""#)
        .setting("postLikes/-Pa1/carol", "true")
        .removing("following/carol/bob").removing("followers/bob/carol")
        .setting(
            "messages/-Ch1/-M3",
            #"{"content": "later", "timestamp": 1500000030, "sender": {"uid": "alice", "username": "alice"}}"#)

    private func sync(_ store: Store, _ json: String, options: SyncOptions = SyncOptions()) throws -> SyncReport {
        try store.sync(opening: { MemorySource(json) }, options: options)
    }

    @Test func aSyncWritesOnlyWhatDiffersAndKeepsTheCopiesRight() throws {
        let store = try consistentStore()
        let report = try sync(store, Self.newer.json)
        try expectTree(store, Self.newer)
        // A post rewritten (one row out, one in), a like and a message in, two follows out.
        #expect(report.rewrites == 5, "\(report.differences)")
        #expect(report.rowsWritten == 3 && report.rowsDeleted == 3, "\(report.nodes)")
        #expect(report.nodes.map(\.name) == ["followers", "following", "messages", "postLikes", "posts"])
        // The like's row carries its post's owner, as after an import.
        #expect(
            try store.connection.query(
                "SELECT post_owner_uid FROM post_likes WHERE liker_uid = 'carol' AND post_key = '-Pa1'"
            )
            .map { try $0.decode(String.self, at: 0) } == ["alice"])
        let again = try sync(store, Self.newer.json)
        #expect(again.rewrites == 0 && again.differenceCount == 0)
    }

    @Test func aDryRunReportsAndChangesNothing() throws {
        let store = try consistentStore()
        let before = try exportJSON(store)
        let report = try sync(store, Self.newer.json, options: SyncOptions(isDryRun: true))
        #expect(report.isDryRun && report.rewrites == 5 && report.rowsWritten == 3)
        #expect(
            report.differences.map { "/" + $0.path.joined(separator: "/") + " " + $0.kind.rawValue } == [
                "/followers/bob/carol extra", "/following/carol/bob extra", "/messages/-Ch1/-M3 missing",
                "/postLikes/-Pa1/carol missing", "/posts/bob/-Pb1/caption missing",
            ])
        expectSameText(try exportJSON(store), before)
    }

    @Test func aSyncAtAPathLeavesTheRestAlone() throws {
        let store = try consistentStore()
        let posts = Self.newer.children?[TreeKey("posts")]?.json ?? "null"
        let report = try sync(store, posts, options: SyncOptions(at: ["posts"]))
        #expect(report.rewrites == 1)
        try expectTree(store, consistentTree.setting("posts/bob/-Pb1/caption", #""edited""#))
    }

    @Test func aSourceHoldingNothingDoesNotEmptyTheStoreUnlessAllowed() throws {
        let store = try consistentStore()
        #expect(throws: StorageError.self) { try sync(store, "{}") }
        try expectTree(store, consistentTree)
        _ = try sync(store, "null", options: SyncOptions(allowsEmptying: true))
        #expect(try store.isEmpty())
    }

    /// A record of several megabytes is compared and written from temporary files, a megabyte in memory at most.
    @Test func aRecordOfSeveralMegabytesIsSynced() throws {
        let store = try consistentStore()
        let bio = String(repeating: "x", count: 3 << 20)
        let before = consistentTree.setting("users/alice/bio", "\"\(bio)\"").setting("users/alice/more", "\"\(bio)\"")
        _ = try sync(store, before.json)
        try expectTree(store, before)
        let after = before.setting("users/alice/more", "\"y\(bio.dropFirst())\"")
        let report = try sync(store, after.json)
        #expect(report.rewrites == 1 && report.counts[.changed] == 1)
        try expectTree(store, after)
        #expect(try sync(store, after.json).rewrites == 0)
    }

    /// "é" and "e\u{301}" are two Firebase keys (Swift's `==` would take them for one): each keeps its own node.
    @Test func keysEqualOnlyUnderCanonicalEquivalenceStayApart() throws {
        let store = try makeStore()
        let composed = "\u{E9}"
        let decomposed = "e\u{301}"
        try importJSON(
            #"{"q": {"\#(decomposed)": {"a": 1}, "\#(composed)": {"b": 2}}, "users": {"\#(composed)": {"username": "x"}, "\#(decomposed)": {"username": "y"}}}"#,
            into: store)
        let newer =
            #"{"q": {"\#(decomposed)": {"a": 10}, "\#(composed)": {"b": 20}}, "users": {"\#(composed)": {"username": "x"}, "\#(decomposed)": {"username": "z"}}}"#
        let report = try sync(store, newer)
        #expect(report.rewrites == 3, "\(report.differences)")
        let reference = try makeStore()
        try importJSON(newer, into: reference)
        expectSameText(try exportJSON(store), try exportJSON(reference))
    }

    @Test func aMalformedTailChangesNothing() throws {
        let store = try consistentStore()
        let before = try exportJSON(store)
        var text = Self.newer.json
        text.removeLast(text.count / 10)
        text += "\u{1}"
        #expect(throws: StorageError.self) { try sync(store, text) }
        expectSameText(try exportJSON(store), before)
        // Nothing is left behind: the next sync runs and brings the store over.
        _ = try sync(store, Self.newer.json)
        try expectTree(store, Self.newer)
    }

    @Test func valuesImportRefusesAreRejectsAndAbortUnlessAllowed() throws {
        let store = try consistentStore()
        let withReject = Self.newer.json.dropLast() + #","q":{"a$b":1,"ok":2}}"#
        let error = #expect(throws: StorageError.self) { try sync(store, String(withReject)) }
        #expect(error?.message.contains("/q/a$b") == true, "\(String(describing: error))")
        try expectTree(store, consistentTree)
        var rejected: [ImportReject] = []
        let report = try store.sync(
            opening: { MemorySource(String(withReject)) }, options: SyncOptions(maximumRejects: 1),
            observer: SyncObserver(onReject: { rejected.append($0) }))
        #expect(report.rejectCount == 1 && rejected.map(\.path) == ["/q/a$b"])
        try expectTree(store, Self.newer.setting("q/ok", "2"))

        // A record that changed, written from its text with a reject inside: the reject counts once.
        let record = Self.newer.json.replacingOccurrences(
            of: #""alice":{"username":"alice"}"#, with: #""alice":{"a$b":1,"username":"al"}"#)
        #expect(record != Self.newer.json)
        rejected = []
        let rewritten = try store.sync(
            opening: { MemorySource(record) }, options: SyncOptions(maximumRejects: 1),
            observer: SyncObserver(onReject: { rejected.append($0) }))
        #expect(rewritten.rejectCount == 1 && rejected.map(\.path) == ["/users/alice/a$b"])
        try expectTree(store, Self.newer.setting("users/alice/username", #""al""#))
    }

    /// The app likes bob's first post in a transaction still open when the sync, which rewrites that post,
    /// reaches its row: the sync waits, then fails on the like's commit, and the like is kept.
    @Test func aLikeOfAPostTheSyncRewritesIsKeptAndTheSyncRefused() throws {
        let database = try TestPostgres.makeDatabase()
        let setup = Store(connection: try database.connect())
        try importJSON(consistentTree.json, into: setup)
        let newer = Self.newer.json
        let error = try whileHolding(database, { app in _ = try app.like("carol", post: "-Pb2") }) { sync in
            _ = try sync.sync(opening: {
                MemorySource(
                    newer.replacingOccurrences(
                        of: #""image_url":"https://i/b2.jpg""#, with: #""image_url":"https://i/b2.png""#))
            })
        }
        #expect(
            error?.contains("another session changed rows this sync rewrites") == true, "\(String(describing: error))")
        #expect(
            try setup.connection.query("SELECT 1 FROM post_likes WHERE post_key = '-Pb2' AND liker_uid = 'carol'").count
                == 1)
        #expect(try exportJSON(setup).contains("b2.jpg"))
    }

    /// A like of a post the sync leaves alone, committed while the sync runs, stays.
    @Test func aLikeOfAnotherPostIsKept() throws {
        let database = try TestPostgres.makeDatabase()
        let setup = Store(connection: try database.connect())
        try importJSON(consistentTree.json, into: setup)
        let holder = Store(connection: try database.connect())
        let newer = Self.newer.json
        // The sync waits for a post it rewrites, which another transaction holds; meanwhile the app likes
        // another post and commits.
        try holder.connection.execute("BEGIN")
        try holder.connection.execute("SELECT 1 FROM posts WHERE post_key = '-Pb1' FOR UPDATE")
        let finished = DispatchSemaphore(value: 0)
        let failure = Mutex<String?>(nil)
        let syncing = Store(connection: try database.connect())
        nonisolated(unsafe) let sendable = syncing
        DispatchQueue.global().async {
            do { _ = try sendable.sync(opening: { MemorySource(newer) }) } catch {
                failure.withLock { $0 = "\(error)" }
            }
            finished.signal()
        }
        try waitForLockWait(on: setup)
        let app = Store(connection: try database.connect())
        _ = try app.like("bob", post: "-Pb2")
        try holder.connection.execute("ROLLBACK")
        finished.wait()
        #expect(failure.withLock { $0 } == nil)
        try expectTree(
            setup, Self.newer.setting("postLikes/-Pb2/bob", "true").setting("posts/bob/-Pb2/like_count", "1"))
    }

    /// While the sync holds its locks (here: waiting for a row in the middle of its writes), readers answer at
    /// once, from the store as it was.
    @Test func readersAreNeverBlockedBySync() throws {
        let database = try TestPostgres.makeDatabase()
        let setup = Store(connection: try database.connect())
        try importJSON(consistentTree.json, into: setup)
        let before = try exportJSON(setup)
        let holder = Store(connection: try database.connect())
        try holder.connection.execute("BEGIN")
        try holder.connection.execute("SELECT 1 FROM posts WHERE post_key = '-Pb1' FOR UPDATE")
        let finished = DispatchSemaphore(value: 0)
        let syncing = Store(connection: try database.connect())
        nonisolated(unsafe) let sendable = syncing
        let newer = Self.newer.json
        DispatchQueue.global().async {
            _ = try? sendable.sync(opening: { MemorySource(newer) })
            finished.signal()
        }
        try waitForLockWait(on: setup)
        let reader = Store(connection: try database.connect())
        try reader.setLockTimeout(.milliseconds(200))
        let started = ContinuousClock.now
        expectSameText(try exportJSON(reader), before)
        #expect(try reader.timeline(of: "alice", limit: 10).count == 3)
        #expect(ContinuousClock.now - started < .seconds(1))
        // A check, which must not run beside a sync, fails at once and names it.
        let error = #expect(throws: StorageError.self) { try reader.check(examples: 0) }
        #expect(error?.message.contains("a sync is running") == true, "\(String(describing: error))")
        try holder.connection.execute("ROLLBACK")
        finished.wait()
        try expectTree(reader, Self.newer)
    }

    /// The store's side is read over a session a core, every one in the sync's snapshot: a like and a user the app
    /// commits once the sync has its snapshot are no difference (a session reading afresh would see them, in
    /// /users the last table, which helpers read first, and the sync would try to remove them), and they stay.
    @Test func theStoreIsReadOverSeveralSessionsInTheSyncsSnapshot() throws {
        let database = try TestPostgres.makeDatabase()
        let store = Store(connection: try database.connect())
        try importJSON(consistentTree.json, into: store)
        let app = Store(connection: try database.connect())
        nonisolated(unsafe) let committing = app
        let observer = SyncObserver(onStep: { step in
            guard step == .comparing else { return }
            _ = try? committing.like("bob", post: "-Pb2")
            _ = try? committing.addUser(uid: "zed", username: "zed")
        })
        let report = try store.sync(opening: { MemorySource(consistentTree.json) }, observer: observer)
        #expect(report.differenceCount == 0 && report.rewrites == 0, "\(report.differences)")
        #expect((report.storeSessions > 1) == (Sessions.perCore > 1), "\(report)")
        let committed = consistentTree.setting("postLikes/-Pb2/bob", "true").setting("posts/bob/-Pb2/like_count", "1")
            .setting("users/zed", #"{"username": "zed"}"#)
        try expectTree(store, committed)
        // The same at a path: one session, which is the sync's.
        let atPath = try store.sync(
            opening: { MemorySource(committed.children?[TreeKey("users")]?.json ?? "null") },
            options: SyncOptions(at: ["users"]))
        #expect(atPath.differenceCount == 0 && atPath.storeSessions == 1)
    }

    @Test func aSecondSyncOrAnImportWaitsForTheMaintenanceLock() throws {
        let database = try TestPostgres.makeDatabase()
        let store = Store(connection: try database.connect())
        try importJSON(consistentTree.json, into: store)
        let other = Store(connection: try database.connect())
        try other.connection.execute("SELECT pg_advisory_lock(\(MaintenanceLock.key))")
        let error = #expect(throws: StorageError.self) { try sync(store, Self.newer.json) }
        #expect(error?.sqlStateCode == "55P03", "\(String(describing: error))")
        try other.connection.execute("SELECT pg_advisory_unlock(\(MaintenanceLock.key))")
        _ = try sync(store, Self.newer.json)
        try expectTree(store, Self.newer)
    }

    /// Waits until some session of the store's database waits for a lock.
    private func waitForLockWait(on store: Store) throws {
        for _ in 0..<500 {
            let waiting = try store.connection.query(
                """
                SELECT EXISTS (SELECT FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock')
                """)[0].decode(Bool.self, at: 0)
            if waiting { return }
            Thread.sleep(forTimeInterval: 0.02)
        }
        Issue.record("no session waited for a lock")
    }
}
