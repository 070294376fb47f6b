import Foundation
import PostgresTestSupport
import Testing

@testable import Storage

@Suite("Migrations")
struct MigratorTests {
    @Test func theEmbeddedMigrationsAreTheFilesInSQL() throws {
        let directory = Repository.url("sql")
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".sql") }
            .sorted()
        #expect(Migration.embedded.map(\.fileName) == files)
        for migration in Migration.embedded {
            let text = try String(contentsOf: directory.appendingPathComponent(migration.fileName), encoding: .utf8)
            #expect(migration.sql == text)
        }
        #expect(Migration.embedded.map(\.version) == Array(1...Migration.embedded.count))
    }

    @Test func appliesEachMigrationOnceAndRecordsItsChecksum() throws {
        let connection = try TestPostgres.makeEmptyDatabase().connect()
        let store = Store(connection: connection)
        #expect(try store.migrationState().schemaVersion == 0)
        let applied = try store.migrate()
        #expect(applied == Migration.embedded)
        #expect(try store.migrate().isEmpty)
        let state = try store.migrationState()
        #expect(state.pending.isEmpty)
        #expect(state.schemaVersion == Migration.embedded.last?.version)
        #expect(state.applied.allSatisfy { $0.checksum.count == 64 })
        #expect(try connection.query("SELECT count(*) FROM users")[0].decode(Int.self, at: 0) == 0)
    }

    @Test func refusesADatabaseWhoseAppliedMigrationWasChanged() throws {
        let connection = try TestPostgres.makeEmptyDatabase().connect()
        let store = Store(connection: connection)
        let original = Migration(fileName: "0001_first.sql", sql: "CREATE TABLE t (a int);")
        try store.migrate(Migrator(migrations: [original]))
        let edited = Migration(fileName: "0001_first.sql", sql: "CREATE TABLE t (a bigint);")
        let error = #expect(throws: StorageError.self) { try store.migrationState(Migrator(migrations: [edited])) }
        #expect(error?.kind == .migration)
        #expect(error?.message.contains("changed after it was applied") == true)
        #expect(throws: StorageError.self) { try store.migrate(Migrator(migrations: [edited])) }
    }

    @Test func refusesMigrationsItDoesNotKnowOrThatWereRenamed() throws {
        let connection = try TestPostgres.makeEmptyDatabase().connect()
        let store = Store(connection: connection)
        let first = Migration(fileName: "0001_first.sql", sql: "CREATE TABLE t (a int);")
        let second = Migration(fileName: "0002_second.sql", sql: "ALTER TABLE t ADD b int;")
        try store.migrate(Migrator(migrations: [first, second]))
        let older = #expect(throws: StorageError.self) { try store.migrationState(Migrator(migrations: [first])) }
        #expect(older?.message.contains("does not know") == true)
        let renamed = Migration(fileName: "0002_renamed.sql", sql: second.sql)
        let error = #expect(throws: StorageError.self) {
            try store.migrationState(Migrator(migrations: [first, renamed]))
        }
        #expect(error?.message.contains("not a prefix") == true)
    }

    @Test func aFailingMigrationLeavesNoTrace() throws {
        let connection = try TestPostgres.makeEmptyDatabase().connect()
        let store = Store(connection: connection)
        let first = Migration(fileName: "0001_first.sql", sql: "CREATE TABLE t (a int);")
        let broken = Migration(fileName: "0002_broken.sql", sql: "CREATE TABLE u (a int); SELECT no_such_function();")
        let error = #expect(throws: StorageError.self) { try store.migrate(Migrator(migrations: [first, broken])) }
        #expect(error?.context?.contains("0002_broken.sql") == true)
        #expect(try store.migrationState(Migrator(migrations: [first, broken])).schemaVersion == 1)
        #expect(try connection.query("SELECT to_regclass('u') IS NULL")[0].decode(Bool.self, at: 0))
    }

    @Test func concurrentMigratorsApplyEachFileOnce() throws {
        let database = try TestPostgres.makeEmptyDatabase()
        let results = Mutex<[Result<Int, Error>]>([])
        let threads = (0..<4).map { _ in
            Thread {
                let outcome = Result { try Store(connection: try database.connect()).migrate().count }
                results.withLock { $0.append(outcome) }
            }
        }
        threads.forEach { $0.start() }
        while results.withLock({ $0.count }) < threads.count { Thread.sleep(forTimeInterval: 0.02) }
        let counts = try results.withLock { try $0.map { try $0.get() } }
        #expect(counts.reduce(0, +) == Migration.embedded.count)
        let connection = try database.connect()
        #expect(
            try connection.query("SELECT count(*) FROM schema_migrations")[0].decode(Int.self, at: 0)
                == Migration.embedded.count)
    }
}
