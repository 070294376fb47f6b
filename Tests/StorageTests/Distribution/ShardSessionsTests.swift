import Foundation
import PostgresClient
import PostgresTestSupport
import Synchronization
import Testing
import TreeTestSupport

@testable import Storage

/// A whole-tree export of a distributed store reads each table's shards from the nodes that hold them, in the
/// export's snapshot there (`ShardSessions`, `ShardMerge`): the bytes one server gives, in keys of every order,
/// over any number of sessions; through the coordinator where a node refuses the console; and Ctrl-C stops it.
@Suite(
    "Exports reading the shards on their nodes", .serialized,
    .enabled(if: TestCitus.isAvailable, Comment(rawValue: "Citus: " + (TestCitus.unavailableReason ?? "available"))))
struct ShardSessionsTests {
    /// Keys that byte order puts elsewhere than RTDB order (integers, a negative one, leading zeros, characters
    /// from U+E000 and astral ones), beside plain and digit-led text keys, push IDs (dash-led, with y and h) and a
    /// backslash, which COPY escapes.
    static let keys = [
        "9", "10", "-5", "007", "7up", "a\u{E000}", "a\u{1F600}", "b\\c", "alice", "2147483648", "-Kb", "-Nyh3hYy",
    ]

    /// A value of several megabytes with the characters COPY escapes and a control character, as a real export's
    /// data URL or caption can be.
    static let largeValue = String(repeating: "iVBORw0KGgo\t\n\\\"\u{7}", count: 300_000)

    /// Every typed table holding such keys in every key column, with a generated tree beside them.
    static let tree: String = {
        func object(_ pairs: [(String, TreeValue)]) -> TreeValue {
            .object(Dictionary(uniqueKeysWithValues: pairs.map { (TreeKey($0.0), $0.1) }))
        }
        func next(_ index: Int) -> String { keys[(index + 1) % keys.count] }
        func postKeys(_ index: Int) -> [String] { ["\(index * 10 + 1)", "\(index * 10 + 9)", "\(-index - 1)"] }
        var tree: [(String, TreeValue)] = []
        tree.append(("users", object(keys.map { ($0, object([("username", .string($0 + "\t\n\\\"\u{7}"))])) })))
        tree.append(
            (
                "posts",
                object(
                    keys.enumerated().map { index, uid in
                        let poster = object([("uid", .string(uid)), ("username", .string(uid))])
                        return (
                            uid,
                            object(
                                postKeys(index).map {
                                    let image = index == 0 && $0 == postKeys(0)[0] ? largeValue : "u"
                                    return (
                                        $0,
                                        object([
                                            ("image_url", .string(image)), ("like_count", .number(1)),
                                            ("poster", poster),
                                        ])
                                    )
                                })
                        )
                    })
            ))
        tree.append(
            (
                "postLikes",
                object(
                    keys.indices.flatMap { index in
                        postKeys(index).map { ($0, object([(next(index), .bool(true)), (keys[index], .bool(true))])) }
                    })
            ))
        tree.append(("following", object(keys.indices.map { (keys[$0], object([(next($0), .bool(true))])) })))
        tree.append(
            ("followers", object(keys.indices.map { (next($0), object([(keys[$0], .bool(true))])) })))
        tree.append(
            (
                "timeline",
                object(
                    keys.indices.map { index in
                        (
                            keys[index],
                            object(
                                postKeys((index + 1) % keys.count).map {
                                    ($0, object([("poster_uid", .string(next(index)))]))
                                })
                        )
                    })
            ))
        let chatKeys = keys.indices.map { ["\($0)", "c\u{E000}\($0)"][$0 % 2] }
        tree.append(
            (
                "chats",
                object(
                    keys.indices.map { index in
                        let chat = object([
                            ("members", object([(keys[index], .bool(true)), (next(index), .bool(true))])),
                            ("title", .string("t")), ("lastMessage", .string("hi")), ("lastMessageSent", .number(1.5)),
                        ])
                        return (keys[index], object([(chatKeys[index], chat)]))
                    })
            ))
        tree.append(
            (
                "messages",
                object(
                    keys.indices.map { index in
                        let sender = object([("uid", .string(keys[index])), ("username", .string(keys[index]))])
                        let message = object([
                            ("content", .string("hi")), ("sender", sender), ("timestamp", .number(1.5)),
                        ])
                        return (chatKeys[index], object(["10", "9", "-1", "x\u{1F600}"].map { ($0, message) }))
                    })
            ))
        let generated = (try? generate(GeneratorOptions(users: 120, seed: 31)).json) ?? "{}"
        guard case .object(let base)? = try? TreeValue.parse(json: generated) else { return "" }
        var merged = base
        for (root, value) in tree {
            guard case .object(let planted) = value else { continue }
            guard case .object(let existing)? = merged[TreeKey(root)] else {
                merged[TreeKey(root)] = value
                continue
            }
            merged[TreeKey(root)] = .object(existing.merging(planted) { _, new in new })
        }
        return TreeValue.object(merged).json
    }()

    /// The tree on one server and on a distributed store of `shardCount` shards a table.
    func makeStores(shardCount: Int? = 4) throws -> (single: Store, citus: Store, database: CitusDatabase) {
        try importedOnOneServerAndDistributed(Self.tree, shardCount: shardCount)
    }

    /// The export of `store` over `jobs` sessions, and its report.
    func export(_ store: Store, jobs: Int) throws -> (json: String, report: ExportReport) {
        var bytes: [UInt8] = []
        let report = try store.exportTree(options: ExportOptions(jobs: jobs)) { bytes.append(contentsOf: $0) }
        return (String(decoding: bytes, as: UTF8.self), report)
    }

    @Test(arguments: [1, 3])
    func aWholeTreeExportReadsEachTableFromItsShardsNodes(jobs: Int) throws {
        let (single, citus, _) = try makeStores()
        let (expected, singleReport) = try export(single, jobs: 1)
        let (json, report) = try export(citus, jobs: jobs)
        expectSameText(json, expected)
        #expect(report.shardNodes == 2, "\(report)")
        #expect(report.shardReadsUnavailable == nil)
        #expect(report.sessions == jobs, "\(report)")
        #expect(report.rows == singleReport.rows)
        // The planted keys make every typed table sort by RTDB order, on both.
        #expect(report.sortedTables == singleReport.sortedTables)
        #expect(Set(report.sortedTables).isSuperset(of: ["users", "posts", "post_likes", "timeline", "messages"]))
    }

    /// At Citus's default of 32 shards, 16 a node: each node merges its shards itself.
    @Test func aStoreOfManyShardsExportsAsOneServerDoes() throws {
        let (single, citus, _) = try makeStores(shardCount: nil)
        let (json, report) = try export(citus, jobs: 2)
        expectSameText(json, try exportJSON(single))
        #expect(report.shardNodes == 2)
    }

    /// A coordinator that holds shards too (`shouldhaveshards`, group 0) is a node like the workers: its shards
    /// are read by a session of its own beside the read's, in the same snapshot, before and after a whole-tree
    /// import placed its twins as the tables are.
    @Test func aCoordinatorHoldingShardsIsReadAsANode() throws {
        let (single, citus, _) = try importedOnOneServerAndDistributed(
            Self.tree, shardCount: 6, coordinatorHoldsShards: true)
        let groups = try citus.connection.query(
            """
            SELECT DISTINCT groupid FROM pg_dist_placement JOIN pg_dist_shard USING (shardid)
            WHERE logicalrelid = 'timeline'::regclass ORDER BY 1
            """
        ).map { try $0.decode(Int.self, at: 0) }
        #expect(groups == [0, 1, 2])
        for round in ["distributed", "imported again"] {
            if round == "imported again" {
                let report = try importJSON(Self.tree, into: citus)
                #expect(report.readersLockedOut == nil)
            }
            for jobs in [1, 2] {
                let (json, report) = try export(citus, jobs: jobs)
                expectSameText(json, try exportJSON(single))
                #expect(report.shardNodes == 3, "\(round), jobs \(jobs): \(report)")
                #expect(report.shardReadsUnavailable == nil, "\(round)")
            }
            #expect(try citus.status().tableRows.map(\.rows) == single.status().tableRows.map(\.rows), "\(round)")
        }
    }

    /// A node that refuses the console's session (here a worker allowing the role one connection, which the
    /// read's own transaction takes there) leaves the export to the coordinator: the same bytes, and why.
    @Test func aNodeRefusingTheConsoleLeavesTheShardsToTheCoordinator() throws {
        let (single, citus, database) = try makeStores()
        let role = "one_connection_\(database.name)"
        try citus.connection.execute(
            script: """
                CREATE ROLE \(role) LOGIN; GRANT SELECT ON ALL TABLES IN SCHEMA public TO \(role);
                GRANT EXECUTE ON FUNCTION hold_distributed_commits() TO \(role)
                """)
        defer { try? citus.connection.execute(script: "DROP OWNED BY \(role); DROP ROLE \(role)") }
        let worker = try Connection(conninfo: database.workers[0])
        // On the worker alone: Citus would carry the limit to every node.
        try worker.execute(script: "SET citus.enable_ddl_propagation = off; ALTER ROLE \(role) CONNECTION LIMIT 1")
        let limited = Store(connection: try Connection(conninfo: database.coordinator + " user=\(role)"))
        for jobs in [1, 2] {
            let (json, report) = try export(limited, jobs: jobs)
            expectSameText(json, try exportJSON(single))
            #expect(report.shardNodes == 0)
            let reason = try #require(report.shardReadsUnavailable)
            #expect(reason.contains("too many connections"), "\(reason)")
            #expect(report.sessions == 1)
        }
        // status answers for such a role too.
        #expect(try limited.status().tableRows.map(\.rows) == single.status().tableRows.map(\.rows))
    }

    /// A table of the tree that is not distributed (moved back to the coordinator by hand) leaves every table to
    /// the coordinator, which reads that one itself: the same bytes, and why.
    @Test func aTableLeftOnTheCoordinatorLeavesTheShardsToIt() throws {
        let (single, citus, _) = try makeStores()
        try citus.connection.execute("SELECT undistribute_table('timeline')")
        let (json, report) = try export(citus, jobs: 2)
        expectSameText(json, try exportJSON(single))
        #expect(report.shardNodes == 0)
        #expect(report.shardReadsUnavailable == "timeline not distributed by hash", "\(report)")
    }

    /// Ctrl-C's cancel requests reach the nodes' sessions in the middle of a table: the export stops with the
    /// cancel, no COPY of a shard runs on after it, and the next export reads the shards again.
    @Test func ctrlCStopsAnExportReadingTheShards() throws {
        let database = try TestCitus.makeDatabase()
        let citus = Store(connection: try database.connect())
        try citus.migrate()
        // Tables larger than a socket's buffers, so that the nodes are still sending when the cancel comes.
        let tree = try generate(GeneratorOptions(users: 1_500, seed: 8)).json
        try importJSON(tree, into: citus)
        _ = try citus.distribute(shardCount: 4)
        let cancel = try #require(citus.makeCanceller())
        var written = 0
        let error = #expect(throws: StorageError.self) {
            _ = try citus.exportTree(options: ExportOptions(jobs: 2)) { bytes in
                written += bytes.count
                // Repeatedly, as the console's Ctrl-C does, once the export is well into its rows; a slow reader.
                guard written > 100_000 else { return }
                cancel()
                Thread.sleep(forTimeInterval: 0.01)
            }
        }
        #expect(error?.sqlState == .queryCanceled, "\(String(describing: error))")
        for worker in database.workers {
            let connection = try Connection(conninfo: worker)
            var running = 1
            for _ in 0..<100 where running > 0 {
                running = try connection.query(
                    """
                    SELECT count(*) FROM pg_stat_activity
                    WHERE datname = current_database() AND pid <> pg_backend_pid() AND query LIKE 'COPY (SELECT %'
                        AND state <> 'idle'
                    """)[0].decode(Int.self, at: 0)
                if running > 0 { Thread.sleep(forTimeInterval: 0.05) }
            }
            #expect(running == 0, "a node still runs the export's COPY")
        }
        let (json, report) = try export(citus, jobs: 2)
        expectSameText(json, tree)
        #expect(report.shardNodes == 2)
    }
}
