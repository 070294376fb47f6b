import Foundation
import PostgresTestSupport
import Testing

@Suite("distribute command on plain PostgreSQL")
struct DistributeRefusalCommandTests {
    @Test func distributeIsRefusedWithAHint() throws {
        let database = try TestPostgres.makeDatabase()
        let run = try AdminProcess.run(["--db", database.conninfo, "distribute"])
        #expect(run.status == 1)
        #expect(run.stdout.isEmpty)
        #expect(run.stderr.contains("is not a Citus coordinator: this database has no citus extension"))
        #expect(run.stderr.contains("HINT:  Distributing needs Citus: CREATE EXTENSION citus"))
    }
}

/// The console against a Citus coordinator with two workers: the same script of maintenance commands leaves the
/// same tree as on one server. Skipped, with the reason, where the server binaries have no citus extension.
@Suite(
    "distribute command on a Citus cluster",
    .enabled(if: TestCitus.isAvailable, Comment(rawValue: "Citus: " + (TestCitus.unavailableReason ?? "available"))))
struct DistributeCommandTests {
    /// Repairs and merges that change the generated tree's planted anomalies, each in one console run.
    static let script = """
        repair orphans
        repair follows --prefer following
        repair chats
        chat merge --all --keep newest
        backfill like-counts
        backfill timelines
        denormalize posters
        rehash chats

        """

    @Test func aDistributedStoreTakesTheConsolesRepairsAsOneServerDoes() throws {
        let directory = try makeTemporaryDirectory("admin-distribute")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let tree = directory + "/tree.json"
        let generated = try AdminProcess.run([
            "generate", tree, "--users", "300", "--seed", "23", "--anomalies",
        ])
        #expect(generated.status == 0, "\(generated.stderr)")
        let single = try TestPostgres.makeDatabase().conninfo
        let citus = try TestCitus.makeDatabase()
        let migrated = try AdminProcess.run(["--db", citus.coordinator, "-q", "migrate"])
        #expect(migrated.status == 0, "\(migrated.stderr)")
        for conninfo in [single, citus.coordinator] {
            let imported = try AdminProcess.run(["--db", conninfo, "-q", "import", tree])
            #expect(imported.status == 0, "\(imported.stderr)")
        }

        let distributed = try AdminProcess.run(["--db", citus.coordinator, "distribute", "--shard-count", "4"])
        #expect(distributed.status == 0, "\(distributed.stderr)")
        #expect(distributed.stdout.contains(" posts           | by owner_uid, with users  | now"))
        #expect(distributed.stdout.contains(" unmapped_values | reference (on every node) | now"))
        #expect(distributed.stderr.contains("Distributed 10 tables; 0 already were."))
        let again = try AdminProcess.run(["--db", citus.coordinator, "distribute"])
        #expect(again.status == 0)
        #expect(again.stderr.contains("Every table was already distributed."))
        let status = try AdminProcess.run(["--db", citus.coordinator, "status"])
        #expect(status.stdout.contains("coordinator with 2 active workers; distributed in 4 co-location groups"))
        let onWorker = try AdminProcess.run(["--db", citus.workers[0], "status"])
        #expect(onWorker.status == 1)
        #expect(onWorker.stderr.contains("is a Citus worker; the store is operated through its coordinator"))

        var exports: [String] = []
        for conninfo in [single, citus.coordinator] {
            let repaired = try AdminProcess.run(["--db", conninfo, "-q"], input: Self.script)
            #expect(repaired.status == 0, "\(repaired.stderr)")
            let export = try AdminProcess.run(["--db", conninfo, "export", "-"])
            #expect(export.status == 0, "\(export.stderr)")
            exports.append(export.stdout)
        }
        #expect(exports[0] == exports[1])
        let original = try String(contentsOfFile: tree, encoding: .utf8)
        #expect(exports[0] != original, "the script changed the tree")
    }
}
