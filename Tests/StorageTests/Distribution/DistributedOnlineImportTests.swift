import FirebaseTree
import Foundation
import PostgresClient
import PostgresTestSupport
import Synchronization
import Testing
import TreeTestSupport

@testable import Storage

/// On Citus too, a whole-tree import fills distributed twins beside the store's tables and switches them in at its
/// end (`SideTables`): readers read the store as it was until then, the twins are placed as the tables were, and a
/// failed or dry run leaves nothing on any node.
@Suite(
    "Whole-tree import beside its readers on a Citus cluster", .serialized,
    .enabled(if: TestCitus.isAvailable, Comment(rawValue: "Citus: " + (TestCitus.unavailableReason ?? "available"))))
struct DistributedOnlineImportTests {
    static let before = Result { try generate(GeneratorOptions(users: 40, seed: 41, plantsAnomalies: true)).json }
    static let after = Result { try generate(GeneratorOptions(users: 30, seed: 42, plantsAnomalies: true)).json }

    /// A distributed store holding `before` (at `shardCount` shards a table), and its export.
    func makeDistributedStore(shardCount: Int = 4, coordinatorInMetadata: Bool = true) throws -> (
        store: Store, database: CitusDatabase, before: String
    ) {
        let database = try TestCitus.makeDatabase(coordinatorInMetadata: coordinatorInMetadata)
        let store = Store(connection: try database.connect())
        try store.migrate()
        try importJSON(try Self.before.get(), into: store)
        _ = try store.distribute(shardCount: shardCount)
        return (store, database, try exportJSON(store))
    }

    /// Runs a whole-tree import of `after` into `database`, gated at half its file (`importGated`).
    func importing(
        into database: CitusDatabase, options: ImportOptions = ImportOptions(),
        onStep: @escaping @Sendable (ImportStep) -> Void = { _ in },
        whileGated: () throws -> Void, whileFinishing: () throws -> Void = {}
    ) throws -> ImportReport {
        try importGated(
            try Self.after.get(), into: Store(connection: try database.connect()), options: options, onStep: onStep,
            whileGated: whileGated, whileFinishing: whileFinishing)
    }

    /// What an import's twins left on the coordinator and on each worker: their schemas, and their tables in
    /// Citus's catalog.
    func leftovers(in database: CitusDatabase) throws -> [String] {
        var found: [String] = []
        for conninfo in [database.coordinator] + database.workers {
            found += try Connection(conninfo: conninfo).query(
                """
                SELECT nspname::text FROM pg_namespace WHERE starts_with(nspname, \(SideTables.schema))
                UNION ALL
                SELECT logicalrelid::text FROM pg_dist_partition
                WHERE logicalrelid::text <> ALL (\(Store.treeTables + Store.lookupTables))
                """
            ).map { "\(conninfo): \(try $0.decode(String.self, at: 0))" }
        }
        return found
    }

    /// How Citus places the store's tables: each table's method, column, shard count and which earlier table it
    /// is co-located with.
    func placements(of store: Store) throws -> [String] {
        try store.connection.query(
            """
            SELECT format('%s %s %s %s shards, with %s', t.name, p.partmethod,
                coalesce(column_to_column_name(p.logicalrelid, p.partkey), '-'),
                (SELECT count(*) FROM pg_dist_shard s WHERE s.logicalrelid = p.logicalrelid),
                coalesce((SELECT min(o.name) FROM unnest(\(Store.treeTables + Store.lookupTables)::text[]) AS o(name)
                    JOIN pg_dist_partition q ON q.logicalrelid = o.name::regclass
                    WHERE q.colocationid = p.colocationid AND p.partmethod = 'h'), '-'))
            FROM unnest(\(Store.treeTables + Store.lookupTables)::text[]) AS t(name)
            JOIN pg_dist_partition p ON p.logicalrelid = t.name::regclass
            ORDER BY t.name
            """
        ).map { try $0.decode(String.self, at: 0) }
    }

    /// With the coordinator in Citus's metadata and without it (where Citus takes a lock on the workers first).
    @Test(arguments: [true, false])
    func readersAnswerFromTheStoreAsItWasWhileTheFileLoads(coordinatorInMetadata: Bool) throws {
        let (store, database, before) = try makeDistributedStore(coordinatorInMetadata: coordinatorInMetadata)
        let placed = try placements(of: store)
        let reader = Store(connection: try database.connect())
        try reader.setLockTimeout(.seconds(2))
        let report = try importing(into: database) {
            // Each of these waited for the whole import before (and failed after the lock timeout).
            expectSameText(try exportJSON(reader), before)
            #expect(try reader.users(limit: 3).count == 3)
            var bytes: [UInt8] = []
            _ = try reader.exportTree(at: ["users"], query: TreeQuery(order: .key, limitToLast: 2)) {
                bytes.append(contentsOf: $0)
            }
            #expect(!bytes.isEmpty)
            // A new session, whose first statement on the workers meets the import's locks there.
            let newcomer = Store(connection: try database.connect())
            try newcomer.setLockTimeout(.seconds(2))
            expectSameText(try exportJSON(newcomer, at: ["users"]), try exportJSON(reader, at: ["users"]))
            #expect(try leftovers(in: database) == [], "the twins are the import's alone until it commits")
        }
        #expect(report.readersLockedOut == nil, "\(report.readersLockedOut ?? "")")
        #expect(report.finishing.contains { $0.target == ImportReport.Finishing.switch })
        expectSameText(try exportJSON(reader), try exported(try Self.after.get()))
        #expect(try placements(of: store) == placed)
        #expect(try leftovers(in: database) == [])
        // The tables switched in are whole Citus tables: written, checked and distributed again as before.
        _ = try store.addUser(uid: "newcomer", username: "n")
        #expect(try exportJSON(store, at: ["users", "newcomer"]) == #"{"username":"n"}"#)
        #expect(try store.distribute().allSatisfy { !$0.changed })
    }

    /// A reader that holds the tables when the switch comes keeps it waiting, asking for its locks a tenth of a
    /// second at a time on the coordinator; readers that come meanwhile get through, as on one server.
    @Test(arguments: [true, false])
    func readersThatComeWhileTheSwitchWaitsGetThrough(coordinatorInMetadata: Bool) throws {
        let (_, database, before) = try makeDistributedStore(coordinatorInMetadata: coordinatorInMetadata)
        let holder = Store(connection: try database.connect())
        let switching = DispatchSemaphore(value: 0)
        let report = try importing(
            into: database, onStep: { if $0 == .switching { switching.signal() } },
            whileGated: {
                for statement in [
                    "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", "LOCK TABLE users IN ACCESS SHARE MODE",
                ] {
                    try holder.connection.execute(script: statement)
                }
            },
            whileFinishing: {
                try #require(switching.wait(timeout: .now() + 60) == .success)
                let reader = Store(connection: try database.connect())
                try reader.setLockTimeout(.seconds(2))
                for _ in 0..<5 {
                    expectSameText(try exportJSON(reader, at: ["users"]), try usersOf(before))
                    Thread.sleep(forTimeInterval: 0.1)
                }
                try holder.connection.execute("ROLLBACK")
            })
        #expect(report.readersLockedOut == nil)
        expectSameText(try exportJSON(holder), try exported(try Self.after.get()))
    }

    /// `/users` of an export.
    func usersOf(_ json: String) throws -> String {
        let store = try makeStore()
        try importJSON(json, into: store)
        return try exportJSON(store, at: ["users"])
    }

    @Test func aFailedOrDryRunImportLeavesTheStoreAndNothingBeside() throws {
        let (store, database, before) = try makeDistributedStore()
        let placed = try placements(of: store)
        // The failed import's rows were in the twins, on the workers.
        try expectFailedAndDryRunImportsLeaveNothing(
            of: try Self.after.get(), into: store, before: before, leftovers: { try leftovers(in: database) })
        #expect(try placements(of: store) == placed)
    }
}
