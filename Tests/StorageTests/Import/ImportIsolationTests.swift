import Foundation
import PostgresTestSupport
import Synchronization
import Testing

@testable import Storage

/// Imports against their neighbours: other imports, the app's operations, `check`, and the operator's own
/// mistakes (an empty file, a full disk).
@Suite("Import isolation and safety")
struct ImportIsolationTests {
    private func users(in database: TestDatabase) throws -> [String] {
        try Store(connection: database.connect()).connection.query("SELECT uid FROM users ORDER BY uid")
            .map { try $0.decode(String.self, at: 0) }
    }

    @Test func twoMergesOfOneNodeRunOneAfterTheOther() throws {
        // Each replaces /users whole: whichever order they run in, one file's users are left, never the union.
        let database = try TestPostgres.makeDatabase()
        try importJSON(
            #"{"users": {"old": {"username": "o"}}, "misc": 1}"#, into: Store(connection: database.connect()))
        let merge = ImportOptions(mode: .merge)
        let error = try whileHolding(
            database,
            { store in
                try importJSON(
                    #"{"users": {"a1": {"username": "a"}, "a2": {"username": "a"}}}"#, into: store, options: merge)
            },
            then: { store in
                try importJSON(#"{"users": {"b1": {"username": "b"}}}"#, into: store, options: merge)
            })
        #expect(error == nil)
        #expect(try users(in: database) == ["b1"])
        #expect(try exportJSON(Store(connection: database.connect())).contains(#""misc":1"#))
    }

    @Test func aWriteIntoARecordDuringAMergeSeesTheMergedRecord() throws {
        let database = try TestPostgres.makeDatabase()
        try importJSON(
            #"{"users": {"u": {"username": "old", "bio": "x"}}}"#, into: Store(connection: database.connect()))
        let error = try whileHolding(
            database,
            { store in
                try importJSON(
                    #"{"users": {"u": {"username": "merged"}}}"#, into: store, options: ImportOptions(mode: .merge))
            },
            then: { store in
                _ = try store.write(.set(json: #""set""#), at: ["users", "u", "bio"])
            })
        #expect(error == nil)
        #expect(
            try exportJSON(Store(connection: database.connect()))
                == #"{"users":{"u":{"bio":"set","username":"merged"}}}"#)
    }

    @Test func appOperationsGiveUpOnAnImportsLocksSayingSo() throws {
        let database = try TestPostgres.makeDatabase()
        let setup = Store(connection: try database.connect())
        try importJSON(consistentTree.json, into: setup)
        let error = try whileHolding(
            database,
            { store in
                try importJSON(#"{"misc": 1}"#, into: store, options: ImportOptions(mode: .merge))
            }, holdingUntilSecondEnds: true,
            then: { store in
                try store.setLockTimeout(.milliseconds(300))
                _ = try store.addUser(uid: "zed", username: "zed")
            })
        #expect(error?.contains("an import is in progress (pid ") == true, "\(error ?? "no error")")
        #expect(error?.contains("waited 300ms") == true, "\(error ?? "no error")")
        #expect(try setup.user("zed") == nil)
    }

    @Test func checkReadsBesideAnImportThatLoadsBesideTheStoreAndRefusesOneThatLocksReadersOut() throws {
        let database = try TestPostgres.makeDatabase()
        let checking = Store(connection: try database.connect())
        try importJSON(consistentTree.json, into: checking)
        try checking.connection.execute("UPDATE posts SET like_count = 5 WHERE post_key = '-Pa1'")
        let before = try checking.check(examples: 1).map { "\($0.check)=\($0.violations)" }
        #expect(before.contains("likeCount=1"), "\(before)")
        // Still reading its file: check answers at once, from the store as it was, and says whom it read beside.
        let gate = GatedSource(#"{"users": {"u1": {"username": "new"}}}"#)
        nonisolated(unsafe) let importing = Store(connection: try database.connect())
        let finished = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            do { _ = try importing.importTree(from: gate) } catch { Issue.record(error, "the import failed") }
            finished.signal()
        }
        try #require(gate.reached.wait(timeout: .now() + 60) == .success)
        let besideWhom = Mutex<LockHolder??>(nil)
        let beside = try checking.check(
            examples: 1,
            wait: MaintenanceWait(seconds: 0) { _ in
                Issue.record("check waited")
            } onReadBeside: { holder in
                besideWhom.withLock { $0 = holder }
            })
        #expect(beside.map { "\($0.check)=\($0.violations)" } == before)
        #expect(besideWhom.withLock { $0??.isImport } == true)
        // Not even the maintenance lock stays behind: a repair waits for the import, not for the check.
        #expect(
            try checking.connection.query(
                "SELECT count(*) FROM pg_locks WHERE pid = pg_backend_pid() AND locktype = 'advisory'")[0].decode(
                    Int.self, at: 0) == 0)
        gate.open.signal()
        #expect(finished.wait(timeout: .now() + 60) == .success)
        #expect(try checking.check(examples: 1).allSatisfy { $0.violations == 0 })

        // An import that locks readers out (a trigger keeps it off side tables) takes the maintenance lock alone:
        // check fails at once, saying so, or queues with a wait.
        try checking.connection.execute(
            script: """
                CREATE FUNCTION audit() RETURNS trigger LANGUAGE plpgsql AS 'BEGIN RETURN NEW; END';
                CREATE TRIGGER audit BEFORE INSERT ON users FOR EACH ROW EXECUTE FUNCTION audit();
                """)
        let locking = Store(connection: try database.connect())
        try locking.connection.withTransaction(rollback: true) {
            try importJSON(consistentTree.json, into: locking)
            do {
                _ = try checking.check(examples: 1)
                Issue.record("check ran during a whole-tree import")
            } catch let error as StorageError {
                #expect(error.message.hasPrefix("an import is running on this database (pid "), "\(error)")
                #expect(error.sqlState == .lockNotAvailable && error.remedy == .waitForMaintenance)
            }
            do {
                _ = try checking.check(examples: 1, wait: MaintenanceWait(seconds: 0.2))
                Issue.record("check ran during a whole-tree import")
            } catch let error as StorageError {
                #expect(error.message.contains("still held the maintenance lock after 0.2 s"), "\(error)")
            }
        }
    }

    @Test func anEmptyFileDoesNotEmptyAStoreUnlessAllowed() throws {
        let store = try makeStore()
        try importJSON(
            #"{"users": {"u": {"username": "kept"}}, "posts": {"u": {"-P": {"image_url": "x"}}}}"#, into: store)
        let before = try exportJSON(store)
        for empty in ["null", "{}", #"{"a": null, "b": {}}"#] {
            #expect(throws: StorageError.self) { try importJSON(empty, into: store) }
            #expect(throws: StorageError.self) {
                try importJSON(empty, into: store, options: ImportOptions(at: ["posts"]))
            }
            #expect(try exportJSON(store) == before)
        }
        do {
            try importJSON("null", into: store)
        } catch let error as StorageError {
            #expect(error.kind == .refused)
            #expect(error.message.contains("the file holds nothing"))
        }
        // Merges, dry runs of nothing into nothing, and explicit permission go through.
        try importJSON("{}", into: store, options: ImportOptions(mode: .merge))
        try importJSON("null", into: store, options: ImportOptions(at: ["posts"], allowsEmptying: true))
        #expect(try exportJSON(store) == #"{"users":{"u":{"username":"kept"}}}"#)
        try importJSON("null", into: store, options: ImportOptions(allowsEmptying: true))
        #expect(try exportJSON(store) == "null")
        try importJSON("null", into: store)
    }

    @Test func theAppsWritesRefuseWhatImportWouldRefuse() throws {
        let store = try makeStore()
        for uid in [".priority", ".value", String(repeating: "u", count: 740), "a/b", "tab\t"] {
            #expect(throws: StorageError.self, "\(uid)") { try store.addUser(uid: uid, username: "x") }
        }
        let longest = String(repeating: "u", count: AppOperations.maximumUIDBytes)
        _ = try store.addUser(uid: longest, username: "x")
        _ = try store.addUser(uid: "short", username: "y")
        // Two uids that fit alone may not fit one path together.
        let other = String(repeating: "v", count: 400)
        _ = try store.addUser(uid: other, username: "z")
        #expect(throws: StorageError.self) { try store.follow(longest, other) }
        #expect(throws: StorageError.self) { try store.addUser(uid: "n", username: "a\u{0}b") }
        #expect(throws: StorageError.self) { try store.createPost(owner: "short", imageURL: "u", imageHeight: .nan) }
        // What the store holds exports and imports back.
        let exported = try exportJSON(store)
        let copy = try makeStore()
        #expect(try importJSON(exported, into: copy).rejectCount == 0)
        #expect(try exportJSON(copy) == exported)
    }

    @Test func aFullDiskSaysHowToGetTheSpaceBack() throws {
        let store = try makeStore()
        do {
            try store.connection.execute(
                "DO $$ BEGIN RAISE EXCEPTION 'could not extend file' USING ERRCODE = 'disk_full'; END $$")
            Issue.record("the statement should have failed")
        } catch let error as StorageError {
            #expect(error.sqlState == .diskFull)
            #expect(error.hint?.contains("VACUUM") == true)
            #expect(error.hint?.contains("CHECKPOINT") == true)
            #expect(error.remedy == .reclaimSpace)
        }
        let vacuumed = try store.vacuum()
        #expect(vacuumed.map(\.table) == Store.treeTables + Store.lookupTables)
    }
}
