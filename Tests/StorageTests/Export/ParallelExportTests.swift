import FirebaseTree
import Foundation
import PostgresTestSupport
import Synchronization
import Testing

@testable import Storage

/// A whole-tree export read over several sessions that share its snapshot (`--jobs`): the same bytes as one
/// session, whatever the shape and the options; what another session commits after the export began is never in
/// it, even in a table a helper reads; a helper that cannot join leaves its share to the export; an output that
/// fails, or a cancel, stops every session.
@Suite("Export over several sessions sharing one snapshot")
struct ParallelExportTests {
    /// The export of `store` with `jobs` sessions, and its report.
    static func export(
        _ store: Store, jobs: Int, options: JSONTextWriter.Options = .init()
    ) throws -> (json: String, report: ExportReport) {
        var bytes: [UInt8] = []
        let report = try store.exportTree(options: ExportOptions(format: options, jobs: jobs)) {
            bytes.append(contentsOf: $0)
        }
        return (String(decoding: bytes, as: UTF8.self), report)
    }

    static let optionSets: [JSONTextWriter.Options] = [
        .init(), .init(isPretty: true), .init(rendersArrays: false), .init(isPretty: true, keepsPriorities: false),
    ]

    /// Trees whose roots are tables read as blocks: generated with every anomaly, a real export, and the shapes of
    /// the any-shape export tests (integer-keyed tables that render as arrays, keys of every ordering class).
    static func trees() throws -> [String] {
        let fixture = try String(
            contentsOf: fixtureDirectory.appendingPathComponent("friendlypix-console-export.json"), encoding: .utf8)
        // Tables a helper renders apart whose root is an array (uids 0…n, with holes; the SDKs' rule), beside
        // another table so that there are blocks to share.
        let arrays = TreeValue.object([
            "users": ExportShapeTests.object((0..<1500).map(String.init)) { .object(["username": .string("u" + $0)]) },
            // The first table, long enough that a helper has joined and taken the last one before it is written.
            "followers": ExportShapeTests.object((0..<3000).map { "f\($0)" }) { _ in
                ExportShapeTests.object(["a", "b", "c", "d"]) { _ in .bool(true) }
            },
            "timeline": ExportShapeTests.object((0..<400).map { String($0 * 2) }) { _ in
                .object(["-P": .object(["poster_uid": .string("a")])])
            },
        ])
        // What real exports hold in the tables a helper takes: values of several MB with control characters and
        // escapes, push IDs that start with "-" (and hold y and h), all-digit keys beside them.
        let escapes = "tab\t nl\n quote\" back\\ \u{01}\u{1F} é 😀 \u{2028}"
        let values = TreeValue.object([
            "followers": ExportShapeTests.object((0..<2000).map { "f\($0)" }) { _ in .object(["a": .bool(true)]) },
            "messages": ExportShapeTests.object(["-KyhYz0", "-Lhy_9", "12345"]) { chat in
                ExportShapeTests.object(["-Mhhyy\(chat)", "7"]) { message in
                    let repeats = chat == "-KyhYz0" && message == "7" ? 75_000 : 3
                    return .object([
                        "content": .string(String(repeating: escapes, count: repeats)), "timestamp": .number(1.5),
                    ])
                }
            },
            "users": ExportShapeTests.object(["-Yh", "0", "10", "9", "yh"]) {
                .object(["username": .string(escapes + $0)])
            },
        ])
        return [
            try generate(GeneratorOptions(users: 40, seed: 3, plantsAnomalies: true)).json, fixture, arrays.json,
            values.json,
        ]
            + ExportShapeTests.shapes().map(\.json)
    }

    @Test func givesTheSameBytesWithAnyNumberOfSessions() throws {
        for (index, json) in try Self.trees().enumerated() {
            let store = try makeStore()
            try importJSON(json, into: store)
            for options in Self.optionSets {
                let one = try Self.export(store, jobs: 1, options: options)
                #expect(one.report.sessions == 1)
                for jobs in [2, 3, 8] {
                    let many = try Self.export(store, jobs: jobs, options: options)
                    #expect(many.json.utf8.elementsEqual(one.json.utf8), "tree \(index), \(options), \(jobs) jobs")
                    #expect(many.report.rows == one.report.rows)
                    #expect(many.report.bytes == one.report.bytes)
                    if index == 2 {
                        // The arrays tree: /users, the last table, is rendered apart, and is an array.
                        #expect(many.report.aheadBytes > 0)
                        let users = options.isPretty ? #""users" : ["# : #""users":["#
                        #expect(options.rendersArrays == many.json.contains(users))
                    }
                }
            }
        }
    }

    @Test func helpersReadTablesAheadAndTheirJSONIsCopiedInPlace() throws {
        let store = try makeStore()
        try importJSON(try generate(GeneratorOptions(users: 300, seed: 3)).json, into: store)
        let many = try Self.export(store, jobs: 3)
        #expect(many.report.sessions == 3)
        #expect(many.report.aheadBytes > 0)
        #expect(many.report.aheadBytes < many.report.bytes)
        // Nothing is left behind: the helpers' sessions are closed when the export returns.
        #expect(try otherSessions(of: store) == 0)
    }

    @Test func aWriteCommittedBeforeAHelperJoinsIsNotInTheExport() throws {
        let database = try TestPostgres.makeDatabase()
        let store = Store(connection: try database.connect())
        try importJSON(try generate(GeneratorOptions(users: 40, seed: 3)).json, into: store)
        let before = try Self.export(store, jobs: 1).json
        // Each helper, before it connects, lets a writer commit changes to every table: new users, a post, likes,
        // follows, and the whole timeline gone.
        let writer = Store(connection: try database.connect())
        nonisolated(unsafe) let sendableWriter = writer
        let writes = Mutex(0)
        store.connection.siblings.willOpen = {
            writes.withLock { count in
                count += 1
                let round = count
                #expect(throws: Never.self) {
                    _ = try sendableWriter.addUser(uid: "zz-late-\(round)", username: "late")
                    _ = try sendableWriter.createPost(
                        owner: "zz-late-\(round)", imageURL: "https://x/\(round)", imageHeight: 100)
                    try sendableWriter.connection.execute("DELETE FROM timeline")
                }
            }
        }
        let during = try Self.export(store, jobs: 3)
        #expect(writes.withLock { $0 } == 2)
        #expect(during.report.sessions == 3)
        expectSameText(during.json, before)
        store.connection.siblings.willOpen = nil
        #expect(!(try Self.export(store, jobs: 1).json.utf8.elementsEqual(before.utf8)), "the writes did land")
    }

    @Test func anImportQueuedForTheTablesLeavesTheExportToItsOwnSession() throws {
        let database = try TestPostgres.makeDatabase()
        let store = Store(connection: try database.connect())
        try importJSON(try generate(GeneratorOptions(users: 40, seed: 3)).json, into: store)
        let before = try Self.export(store, jobs: 1).json
        let replacement = try generate(GeneratorOptions(users: 9, seed: 12)).json
        let importer = Store(connection: try database.connect())
        let importerPID = try importer.connection.query("SELECT pg_backend_pid()")[0].decode(Int.self, at: 0)
        nonisolated(unsafe) let sendableImporter = importer
        let imported = DispatchSemaphore(value: 0)
        let importError = Mutex<String?>(nil)
        let observer = try database.connect()
        nonisolated(unsafe) let sendableObserver = observer
        // The helper is about to connect when an import queues for the tables the export holds: joining would
        // wait behind it, and the import waits for the export.
        store.connection.siblings.willOpen = {
            Thread {
                do { try importJSON(replacement, into: sendableImporter) } catch {
                    importError.withLock { $0 = "\(error)" }
                }
                imported.signal()
            }.start()
            var waiting = false
            for _ in 0..<250 where !waiting {
                Thread.sleep(forTimeInterval: 0.02)
                waiting =
                    (try? sendableObserver.query(
                        "SELECT wait_event_type = 'Lock' FROM pg_stat_activity WHERE pid = \(importerPID)"
                    ).first?.decode(Bool?.self, at: 0)) == true
            }
            #expect(waiting, "the import did not queue for the tables")
        }
        let during = try Self.export(store, jobs: 2)
        expectSameText(during.json, before)
        #expect(during.report.sessions == 1, "the helper could not join, and did not wait")
        #expect(imported.wait(timeout: .now() + 60) == .success)
        #expect(importError.withLock { $0 } == nil)
        store.connection.siblings.willOpen = nil
        let reference = try makeStore()
        try importJSON(replacement, into: reference)
        expectSameText(try Self.export(store, jobs: 2).json, try Self.export(reference, jobs: 1).json)
    }

    @Test func aHelperThatFailsLeavesItsTableToTheExport() throws {
        let database = try TestPostgres.makeDatabase()
        let store = Store(connection: try database.connect())
        try importJSON(try generate(GeneratorOptions(users: 3000, seed: 5)).json, into: store)
        let whole = try Self.export(store, jobs: 1).json
        let exportPID = try store.connection.query("SELECT pg_backend_pid()")[0].decode(Int.self, at: 0)
        let killer = try database.connect()
        nonisolated(unsafe) let sendableKiller = killer
        let killed = Atomic<Bool>(false)
        // Once the helper has joined and reads a table, its backend is terminated (a server that lost it); not
        // while it joins, where it would not count as a session.
        store.connection.siblings.willOpen = {
            Thread {
                for _ in 0..<5000 where !killed.load(ordering: .relaxed) {
                    let done =
                        (try? sendableKiller.query(
                            """
                            SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                            WHERE datname = current_database() AND pid NOT IN (\(exportPID), pg_backend_pid())
                                AND backend_type = 'client backend' AND state = 'active' AND query LIKE 'COPY%'
                            """
                        ).first?.decode(Bool.self, at: 0)) == true
                    if done { killed.store(true, ordering: .relaxed) } else { usleep(1000) }
                }
            }.start()
        }
        let during = try Self.export(store, jobs: 2)
        store.connection.siblings.willOpen = nil
        let wasKilled = killed.load(ordering: .relaxed)
        #expect(wasKilled, "the helper's backend was not terminated in time")
        #expect(during.report.sessions == 2)
        expectSameText(during.json, whole)
        #expect(try otherSessions(of: store) <= 1, "only the killer's own session is left")
    }

    @Test func anOutputThatFailsStopsEverySession() throws {
        struct Full: Error {}
        let store = try makeStore()
        try importJSON(try generate(GeneratorOptions(users: 300, seed: 5)).json, into: store)
        let whole = try Self.export(store, jobs: 1).json
        #expect(whole.utf8.count > 3 * TreeEmitter.chunkSize, "the output comes in several chunks")
        #expect(throws: Full.self) {
            _ = try store.exportTree(options: ExportOptions(jobs: 3)) { _ in throw Full() }
        }
        #expect(try otherSessions(of: store) == 0)
        expectSameText(try Self.export(store, jobs: 3).json, whole)
    }

    @Test func cancellingTheStoreCancelsItsHelpers() throws {
        let store = try makeStore()
        try importJSON(try generate(GeneratorOptions(users: 3000, seed: 5)).json, into: store)
        let whole = try Self.export(store, jobs: 1).json
        let cancel = try #require(store.makeCanceller())
        // As the console does on Ctrl-C: cancel requests every few milliseconds until the command has ended (one
        // that arrives between two statements is lost), starting once the export writes.
        let ended = Atomic<Bool>(false)
        let cancelling = DispatchSemaphore(value: 0)
        let stopped = DispatchSemaphore(value: 0)
        // A thread of its own: the shared pool may be busy with other tests for longer than the export takes.
        Thread {
            cancelling.wait()
            while !ended.load(ordering: .relaxed) {
                cancel()
                usleep(5000)
            }
            stopped.signal()
        }.start()
        let error = #expect(throws: StorageError.self) {
            defer { ended.store(true, ordering: .relaxed) }
            var chunks = 0
            _ = try store.exportTree(options: ExportOptions(jobs: 3)) { _ in
                chunks += 1
                if chunks == 1 { cancelling.signal() }
            }
        }
        // No cancel request is still on its way to the next statement.
        stopped.wait()
        #expect(error?.sqlState == .queryCanceled, "\(String(describing: error))")
        #expect(try otherSessions(of: store) == 0)
        expectSameText(try Self.export(store, jobs: 3).json, whole)
    }

    /// Sessions on the store's database other than its own, once those closing have gone (a backend ends just
    /// after its client closes).
    func otherSessions(of store: Store) throws -> Int {
        var count = 0
        for _ in 0..<100 {
            count = try store.connection.query(
                """
                SELECT count(*) FROM pg_stat_activity
                WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'
                """)[0].decode(Int.self, at: 0)
            if count == 0 { break }
            Thread.sleep(forTimeInterval: 0.05)
        }
        return count
    }
}
