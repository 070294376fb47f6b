import Foundation
import PostgresClient
import PostgresTestSupport
import Testing

@testable import Storage

/// Failures in the middle of work: each must leave the store exactly as it was before the failed operation
/// (compared as exports) and no partial output file.
@Suite("Faults")
struct FaultTests {
    /// Waits (up to 60 s) until `condition` holds, polling.
    private func waitUntil(_ what: String, _ condition: () throws -> Bool) throws {
        let deadline = Date().addingTimeInterval(60)
        while try !condition() {
            guard Date() < deadline else { throw StorageError(.invalidValue, "timed out waiting until \(what)") }
            Thread.sleep(forTimeInterval: 0.02)
        }
    }

    /// Waits until the export to `target` has written bytes into its temporary file, or `exporting` ended.
    private func waitUntilWriting(_ target: String, or exporting: Process) throws {
        let directory = (target as NSString).deletingLastPathComponent
        let name = (target as NSString).lastPathComponent
        try waitUntil("the export is writing") {
            // The temporary file's name is random: any `.NAME.*.tmp` beside the target.
            let temporary = (try? FileManager.default.contentsOfDirectory(atPath: directory))?
                .first { $0.hasPrefix("." + name + ".") && $0.hasSuffix(".tmp") }
            return temporary.flatMap {
                (try? FileManager.default.attributesOfItem(atPath: directory + "/" + $0))?[.size] as? Int
            } ?? 0 > 0 || !exporting.isRunning
        }
    }

    /// Whether a backend of another client is running a statement that starts with `prefix` (or waits on a
    /// lock, with `waitingOnLock`).
    private func someoneIsRunning(_ prefix: String, on connection: Connection, waitingOnLock: Bool = false) throws
        -> Bool
    {
        try connection.query(
            """
            SELECT EXISTS (SELECT FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND datname = current_database()
                AND state = 'active' AND query LIKE \(prefix + "%")
                AND (NOT \(waitingOnLock) OR wait_event_type = 'Lock'))
            """)[0].decode(Bool.self, at: 0)
    }

    /// The schemas of an import's side tables that exist (none, outside an import's transaction; a parallel
    /// import's sessions', from each session's commit, once its nodes are loaded, to the import's).
    private func sideTables(on connection: Connection) throws -> [String] {
        try connection.query(
            "SELECT nspname FROM pg_namespace WHERE starts_with(nspname, \(SideTables.schema))"
        ).map { try $0.decode(String.self, at: 0) }
    }

    private func export(_ arguments: [String]) throws -> String {
        let run = try AdminProcess.run(arguments + ["-q", "export", "-"])
        #expect(run.status == 0, "\(run.stderr)")
        return run.stdout
    }

    private func generate(_ path: String, users: Int, anomalies: Bool = false) throws {
        let run = try AdminProcess.run(
            ["-q", "generate", path, "--users", String(users), "--seed", "3"]
                + (anomalies ? ["--anomalies"] : []))
        #expect(run.status == 0, "\(run.stderr)")
    }

    /// Starts an import of `file`, checks that an export meanwhile reads the store as it was (`before`: the import
    /// fills tables beside the store's), then kills the console (SIGKILL) while the import still streams its COPY.
    private func killImportWhileItCopies(_ file: String, db: [String], before: String, observer: Connection) throws {
        let (importing, _, _, _) = try AdminProcess.start(db + ["import", file])
        try waitUntil("the import is copying") { try someoneIsRunning("COPY", on: observer) }
        #expect(try export(db) == before)
        #expect(try someoneIsRunning("COPY", on: observer), "the import finished before the export did")
        kill(importing.processIdentifier, SIGKILL)
        importing.waitUntilExit()
        #expect(importing.terminationReason == .uncaughtSignal)
    }

    @Test func killingTheConsoleDuringAnImportAnExportOrARepairChangesNothing() throws {
        let database = try TestPostgres.makeDatabase()
        let directory = try makeTemporaryDirectory("admin-kill")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try generate(directory + "/small.json", users: 400, anomalies: true)
        try generate(directory + "/big.json", users: 12_000)
        let db = ["--db", database.conninfo]
        #expect(try AdminProcess.run(db + ["-q", "import", directory + "/small.json"]).status == 0)
        let before = try export(db)
        let observer = try database.connect()

        // kill -9 while the import streams its COPY.
        try killImportWhileItCopies(directory + "/big.json", db: db, before: before, observer: observer)
        #expect(try export(db) == before)
        #expect(try sideTables(on: observer) == [], "a killed import left its side tables behind")

        // kill -9 while the export writes its file: no file where the export was going.
        let target = directory + "/out.json"
        let (exporting, _, _, _) = try AdminProcess.start(db + ["export", target])
        try waitUntilWriting(target, or: exporting)
        kill(exporting.processIdentifier, SIGKILL)
        exporting.waitUntilExit()
        #expect(!FileManager.default.fileExists(atPath: target))
        #expect(try export(db) == before)

        // kill -9 in the middle of a repair's transaction: it holds the tree against writes and its UPDATE of
        // like counts waits for the last post to set, whose row this test holds (a row lock: the repair's table
        // locks do not wait for it).
        try observer.execute("BEGIN")
        try observer.execute(
            """
            SELECT 1 FROM posts p WHERE like_count IS DISTINCT FROM
                (SELECT count(*) FROM post_likes l WHERE l.post_key = p.post_key AND l.post_owner_uid = p.owner_uid)
            ORDER BY owner_uid DESC, post_key DESC LIMIT 1 FOR UPDATE
            """)
        let (repairing, _, _, _) = try AdminProcess.start(db + ["backfill", "like-counts"])
        let waiting = try database.connect()
        try waitUntil("the repair waits for the lock") {
            try someoneIsRunning("UPDATE posts", on: waiting, waitingOnLock: true)
        }
        kill(repairing.processIdentifier, SIGKILL)
        repairing.waitUntilExit()
        try observer.execute("ROLLBACK")
        #expect(try export(db) == before)
        // The same repair, left alone, changes the store: the kills above did interrupt real work.
        let repaired = try AdminProcess.run(db + ["backfill", "like-counts"])
        #expect(repaired.status == 0, "\(repaired.stderr)")
        #expect(try export(db) != before)
    }

    /// A parallel import's sessions commit their tables before they build the indexes: a console killed then
    /// leaves them in schemas nothing reads, which `status` lists; its orphaned builds stop, and `vacuum` (or the
    /// next import) drops them, though never while an import runs.
    @Test func killingTheConsoleWhileItsSessionsBuildIndexesLeavesWhatTheNextImportDrops() throws {
        let database = try TestPostgres.makeDatabase()
        let directory = try makeTemporaryDirectory("admin-kill-builds")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try generate(directory + "/small.json", users: 300)
        try generate(directory + "/big.json", users: 3_000)
        let db = ["--db", database.conninfo]
        #expect(try AdminProcess.run(db + ["-q", "import", directory + "/small.json"]).status == 0)
        let before = try export(db)
        let statusBefore = try AdminProcess.run(db + ["-q", "status", "--format", "json"]).stdout
        let observer = try database.connect()
        // An operator's index whose build takes a twentieth of a second a row (minutes for the file) while
        // `slow_builds` has a row.
        try observer.execute(
            script: """
                CREATE TABLE slow_builds (slow boolean);
                CREATE FUNCTION slow_key(u text) RETURNS text IMMUTABLE LANGUAGE plpgsql AS $$
                BEGIN
                    IF EXISTS (SELECT FROM public.slow_builds) THEN PERFORM pg_sleep(0.05); END IF;
                    RETURN u;
                END $$;
                CREATE INDEX users_slow ON users (slow_key(uid));
                INSERT INTO slow_builds VALUES (true);
                """)
        let (importing, _, _, _) = try AdminProcess.start(db + ["import", directory + "/big.json", "--jobs", "2"])
        try waitUntil("a session builds the slow index") {
            try someoneIsRunning("CREATE INDEX users_slow ON \(SideTables.helperSchemaPrefix)", on: observer)
        }
        // While the import runs, its sessions' schemas are its own: status says so, vacuum keeps them.
        let running = try AdminProcess.run(db + ["status"])
        #expect(running.stdout.contains("loaded by the running import"), "\(running.stdout)")
        // (Its VACUUM then waits for the import's tables, which it holds: a lock timeout, as before.)
        let vacuumBeside = try AdminProcess.run(db + ["vacuum"])
        #expect(vacuumBeside.stderr.contains("WARNING:  kept "), "\(vacuumBeside.stderr)")
        #expect(vacuumBeside.stderr.contains("an import (pid"), "\(vacuumBeside.stderr)")
        #expect(try sideTables(on: observer).contains { $0.hasPrefix(SideTables.helperSchemaPrefix) })
        kill(importing.processIdentifier, SIGKILL)
        importing.waitUntilExit()
        let left = try sideTables(on: observer).filter { $0.hasPrefix(SideTables.helperSchemaPrefix) }
        #expect(!left.isEmpty, "the sessions had committed their tables")
        #expect(try export(db) == before)

        let check = try AdminProcess.run(db + ["-q", "check", "--format", "json"])
        #expect(!check.stdout.contains("admin_import"), "\(check.stdout)")
        try waitUntil("the orphaned build stops") {
            try !someoneIsRunning("CREATE INDEX users_slow", on: observer)
        }
        let status = try AdminProcess.run(db + ["status"])
        for schema in left { #expect(status.stdout.contains(schema), "\(status.stdout)") }
        #expect(status.stdout.contains("left by an import that never finished: vacuum drops them"), "\(status.stdout)")
        let json = try AdminProcess.run(db + ["-q", "status", "--format", "json"]).stdout
        #expect(json.contains(#""import_running": false"#) && json.contains(SideTables.helperSchemaPrefix), "\(json)")
        try observer.execute("DELETE FROM slow_builds")
        let vacuum = try AdminProcess.run(db + ["vacuum"])
        #expect(vacuum.status == 0, "\(vacuum.stderr)")
        #expect(vacuum.stderr.contains("that a parallel import which never finished left behind"), "\(vacuum.stderr)")
        #expect(try sideTables(on: observer) == [])
        #expect(try AdminProcess.run(db + ["-q", "status", "--format", "json"]).stdout == statusBefore)
        let next = try AdminProcess.run(db + ["-q", "import", directory + "/small.json", "--jobs", "2"])
        #expect(next.status == 0, "\(next.stderr)")
        #expect(try sideTables(on: observer) == [])
        #expect(try export(db) == before)
    }

    /// On Citus a whole-tree import fills distributed twins in its transaction: killed while it streams its COPY,
    /// it leaves the store as it was and nothing of the twins on any node (schemas, tables, Citus's catalog), and
    /// readers read the store meanwhile.
    @Test(.enabled(if: TestCitus.isAvailable, Comment(rawValue: "Citus: " + (TestCitus.unavailableReason ?? ""))))
    func killingTheConsoleDuringADistributedImportLeavesNothingOnAnyNode() throws {
        let database = try TestCitus.makeDatabase(coordinatorInMetadata: false)
        let directory = try makeTemporaryDirectory("admin-kill-citus")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try generate(directory + "/small.json", users: 300)
        try generate(directory + "/big.json", users: 12_000)
        let db = ["--db", database.coordinator]
        for step in [["migrate"], ["import", directory + "/small.json"], ["distribute", "--shard-count", "4"]] {
            let run = try AdminProcess.run(db + ["-q"] + step)
            #expect(run.status == 0, "\(step): \(run.stderr)")
        }
        let before = try export(db)
        let observer = try database.connect()
        func leftovers() throws -> [String] {
            try ([database.coordinator] + database.workers).flatMap { conninfo in
                try Connection(conninfo: conninfo).query(
                    """
                    SELECT nspname::text FROM pg_namespace WHERE starts_with(nspname, \(SideTables.schema))
                    UNION ALL
                    SELECT logicalrelid::text FROM pg_dist_partition
                    WHERE logicalrelid::text <> ALL (\(Store.treeTables + Store.lookupTables))
                    """
                ).map { "\(conninfo): \(try $0.decode(String.self, at: 0))" }
            }
        }
        try killImportWhileItCopies(directory + "/big.json", db: db, before: before, observer: observer)
        try waitUntil("the killed import's transaction has ended") {
            try !someoneIsRunning("COPY", on: observer)
        }
        #expect(try export(db) == before)
        #expect(try leftovers() == [])
        let next = try AdminProcess.run(db + ["-q", "import", directory + "/small.json"])
        #expect(next.status == 0, "\(next.stderr)")
        #expect(try export(db) == before)
        #expect(try leftovers() == [])
    }

    @Test func stoppingTheServerImmediatelyDuringAnImportLosesNothingOnceItRestarts() throws {
        let directory = try makeTemporaryDirectory("admin-stop")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try generate(directory + "/small.json", users: 300)
        try generate(directory + "/big.json", users: 12_000)
        let dataDirectory = directory + "/cluster"
        let embedded = ["--data-dir", dataDirectory]
        #expect(try AdminProcess.run(embedded + ["-q", "import", directory + "/small.json"]).status == 0)
        let before = try export(embedded)

        let (importing, _, _, errors) = try AdminProcess.start(embedded + ["import", directory + "/big.json"])
        let user = String(cString: getpwuid(geteuid())!.pointee.pw_name)
        // The console starts the server; watch it from another connection once it accepts them.
        var observer: Connection?
        try waitUntil("the import is copying") {
            if observer == nil {
                observer = try? Connection(
                    conninfo: "",
                    parameters: [
                        ("host", dataDirectory + "/pgdata"), ("user", user), ("dbname", "admin"),
                    ])
            }
            return try observer.map { try someoneIsRunning("COPY", on: $0) } ?? false
        }
        let stop = try ProcessRunner(user: geteuid() == 0 ? "postgres" : nil).run(
            try ServerBinaries.locate().directory + "/pg_ctl",
            ["-D", dataDirectory + "/pgdata", "stop", "-m", "immediate"])
        #expect(stop.succeeded, "\(stop.output)")
        importing.waitUntilExit()
        let diagnostics = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(importing.terminationStatus != 0)
        #expect(diagnostics.contains("import rolled back"), "\(diagnostics)")
        // The next console starts the server again (crash recovery) and finds the store as it was.
        #expect(try export(embedded) == before)
    }

    @Test func aFullDiskDuringAnExportIsAClearErrorAndLeavesNoFile() throws {
        let database = try TestPostgres.makeDatabase()
        let directory = try makeTemporaryDirectory("admin-full")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try generate(directory + "/tree.json", users: 600)
        #expect(
            try AdminProcess.run(["--db", database.conninfo, "-q", "import", directory + "/tree.json"]).status == 0)

        // A 256 KB tmpfs where root may mount one; otherwise a 256 KB file size limit (EFBIG instead of ENOSPC).
        let disk = directory + "/disk"
        try FileManager.default.createDirectory(atPath: disk, withIntermediateDirectories: true)
        let mounted =
            geteuid() == 0
            && (try? ProcessRunner().run("/bin/mount", ["-t", "tmpfs", "-o", "size=256k", "tmpfs", disk]))?.succeeded
                == true
        defer { if mounted { _ = try? ProcessRunner().run("/bin/umount", [disk]) } }
        let admin = AdminProcess.executable.path
        let limit = mounted ? "" : "trap '' XFSZ; ulimit -f 512; "
        // Compressed too, where threads deflate the blocks the writer then fails to write.
        for name in ["out.json", "out.json.gz"] {
            let shell = try ProcessRunner().run(
                "/bin/sh",
                [
                    "-c", "\(limit)exec '\(admin)' --db '\(database.conninfo)' export '\(disk)/\(name)'",
                ])
            #expect(!shell.succeeded, "\(name)")
            #expect(shell.output.contains("cannot write"), "\(shell.output)")
            #expect(shell.output.contains(mounted ? "No space left on device" : "File too large"), "\(shell.output)")
            #expect(try FileManager.default.contentsOfDirectory(atPath: disk) == [])
        }
    }

    /// Ctrl-C (SIGINT) during an export to .gz, whose blocks other threads deflate: the export stops at once with
    /// the signal's status, and no file is left, neither the export nor its temporary.
    @Test func ctrlCDuringACompressedExportLeavesNoFile() throws {
        let database = try TestPostgres.makeDatabase()
        let directory = try makeTemporaryDirectory("admin-int-gz")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try generate(directory + "/big.json", users: 12_000)
        let db = ["--db", database.conninfo]
        #expect(try AdminProcess.run(db + ["-q", "import", directory + "/big.json", "-y"]).status == 0)
        let target = directory + "/out.json.gz"
        let (exporting, _, _, _) = try AdminProcess.start(db + ["export", target])
        try waitUntilWriting(target, or: exporting)
        #expect(exporting.isRunning, "the export ended before it could be interrupted")
        let interrupted = Date()
        kill(exporting.processIdentifier, SIGINT)
        exporting.waitUntilExit()
        #expect(Date().timeIntervalSince(interrupted) < 10)
        #expect(exporting.terminationStatus != 0)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == ["big.json"])
    }
}
