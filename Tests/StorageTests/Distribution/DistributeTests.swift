import Foundation
import PostgresClient
import PostgresTestSupport
import Synchronization
import Testing

@testable import Storage

@Suite("Distributing on plain PostgreSQL")
struct DistributeRefusalTests {
    @Test func distributeIsRefusedWithoutCitus() throws {
        let store = try makeStore()
        #expect(try store.distributionState().role == .plain)
        let error = try #require(throws: StorageError.self) { try store.distribute() }
        #expect(error.kind == .distribution)
        #expect(error.message.contains("no citus extension"))
        #expect(try store.status().distribution.citusVersion == nil)
        #expect(try store.status().readsHoldDistributedCommits == nil)
    }
}

/// `tree` imported on a single server and on a Citus store, which is then distributed at `shardCount` shards a table
/// (nil: Citus's default); with `coordinatorHoldsShards`, the coordinator (group 0) takes shards as the workers do.
func importedOnOneServerAndDistributed(_ tree: String, shardCount: Int? = 4, coordinatorHoldsShards: Bool = false)
    throws -> (single: Store, citus: Store, database: CitusDatabase)
{
    let single = try makeStore()
    try importJSON(tree, into: single)
    let database = try TestCitus.makeDatabase()
    let citus = Store(connection: try database.connect())
    if coordinatorHoldsShards {
        try citus.connection.execute(
            """
            SELECT citus_set_node_property(nodename, nodeport, 'shouldhaveshards', true)
            FROM pg_dist_node WHERE groupid = 0
            """)
    }
    try citus.migrate()
    try importJSON(tree, into: citus)
    _ = try citus.distribute(shardCount: shardCount)
    return (single, citus, database)
}

/// The store on a Citus coordinator with two workers, against the same operations on a single server. Runs where
/// the server binaries have the citus extension (built by hand: Citus is in no Debian archive), and is skipped,
/// with the reason, elsewhere.
@Suite(
    "On a Citus cluster", .serialized,
    .enabled(if: TestCitus.isAvailable, Comment(rawValue: "Citus: " + (TestCitus.unavailableReason ?? "available"))))
struct CitusTests {
    /// A generated tree with about 200 planted violations of each check (fewer at this size), the same each run.
    static let tree: String = (try? generate(GeneratorOptions(users: 300, seed: 23, plantsAnomalies: true)))?.json ?? ""

    /// The tree imported on a single server and on a distributed store.
    func makeStores() throws -> (single: Store, citus: Store, database: CitusDatabase) {
        try importedOnOneServerAndDistributed(Self.tree)
    }

    @Test func distributingKeepsEveryByteAndIsIdempotent() throws {
        let (_, citus, _) = try makeStores()
        let state = try citus.distributionState()
        #expect(state.role == .coordinator)
        #expect(state.workerCount == 2)
        #expect(state.isDistributed)
        #expect(state.tables.map(\.name) == Store.distributionPlan.map(\.name))
        let users = try #require(state.tables.first { $0.name == "users" })
        for name in ["posts", "post_likes", "followers", "following", "timeline", "chats"] {
            #expect(state.tables.first { $0.name == name }?.colocationID == users.colocationID, "\(name)")
        }
        #expect(state.tables.first { $0.name == "unmapped_values" }?.kind == "reference")
        #expect(try citus.distribute().allSatisfy { !$0.changed })
        expectSameText(try exportJSON(citus), Self.tree)
        // The rows are on the workers, not left behind on the coordinator.
        for table in Store.distributionPlan.map(\.name) {
            let bytes = try citus.connection.query("SELECT pg_relation_size(\(table)::regclass)")[0].decode(
                Int.self, at: 0)
            #expect(bytes == 0, "\(table)")
        }
    }

    /// The import fills distributed tables beside the store's, builds their indexes and primary keys after the
    /// rows (on every shard) and switches them in: the coordinator's indexes and every placement's are as they
    /// were, but for the shards' new numbers.
    @Test func aReplacingImportOfADistributedStoreGivesTheFileBack() throws {
        let (_, citus, _) = try makeStores()
        let other = try generate(GeneratorOptions(users: 120, seed: 4)).json
        func indexes() throws -> [String] {
            let coordinator = try citus.connection.query(
                "SELECT indexdef FROM pg_indexes WHERE schemaname = 'public' ORDER BY 1"
            ).map { try $0.decode(String.self, at: 0) }
            let placements = try citus.connection.query(
                """
                SELECT logicalrelid::text || ' ' || regexp_replace(result, '_[0-9]+\\M', '_N', 'g')
                FROM pg_dist_partition, run_command_on_placements(logicalrelid,
                    'SELECT string_agg(indexdef, '' '' ORDER BY indexname) FROM pg_indexes WHERE tablename = ''%s''')
                ORDER BY 1
                """
            ).map { try $0.decode(String.self, at: 0) }
            // A shard's number ends its name and each of its indexes' (replaced above by N).
            return coordinator + placements
        }
        let before = try indexes()
        let started = try citus.connection.query("SELECT now()::text")[0].decode(String.self, at: 0)
        let report = try importJSON(other, into: citus)
        expectSameText(try exportJSON(citus), other)
        #expect(try indexes() == before)
        // The lookups, filled through the coordinator, hold each record's key and holder.
        for (lookup, records) in [("post_keys", "posts"), ("chat_holders", "chats")] {
            let records = try #require(HeldRecords.all.first { $0.table == records })
            #expect(records.lookup == lookup)
            func pairs(in table: String) throws -> [String] {
                try citus.connection.query(
                    """
                    SELECT \(identifier: records.key) || ' ' || \(identifier: records.holder)
                    FROM \(identifier: table) ORDER BY 1
                    """
                ).map { try $0.decode(String.self, at: 0) }
            }
            let held = try pairs(in: records.table), looked = try pairs(in: lookup)
            #expect(!held.isEmpty && looked == held, "\(lookup)")
        }
        let builds = report.finishing.first { $0.target == ImportReport.Finishing.indexes }
        #expect((builds?.count ?? 0) >= 2 * Store.treeTables.count, "\(report.finishing)")
        // Citus cannot ANALYZE shards its transaction wrote: the statistics are gathered after the commit.
        // In one statement for every table, which Citus sends to every placement.
        let analyzing = Store.treeTables + Store.lookupTables
        #expect(
            report.finishing.last
                == .init(
                    target: ImportReport.Finishing.statistics, count: analyzing.count,
                    seconds: report.finishing.last?.seconds ?? 0),
            "\(report.finishing)")
        #expect(report.finishing.dropLast().last?.target == ImportReport.Finishing.commit, "\(report.finishing)")
        #expect(report.warnings.isEmpty, "\(report.warnings)")
        let unanalyzed = try citus.connection.query(
            """
            SELECT logicalrelid::text || ' ' || shardid || ' ' || result
            FROM pg_dist_partition, run_command_on_placements(logicalrelid,
                'SELECT last_analyze FROM pg_stat_user_tables WHERE relid = ''%s''::regclass')
            WHERE NOT success OR result = '' OR result::timestamptz < \(started)::timestamptz
            ORDER BY 1
            """
        ).map { try $0.decode(String.self, at: 0) }
        #expect(unanalyzed.isEmpty)
        let tables = try citus.connection.query(
            "SELECT count(DISTINCT logicalrelid) FROM pg_dist_partition")[0].decode(Int.self, at: 0)
        #expect(tables == analyzing.count)
    }

    /// A file that can be read again: on Citus one session loads it into distributed tables beside the store's
    /// (switched in at the end: readers are not locked out), the likes read after the posts and sent with their
    /// owners to their owners' shards, or staged when a post key has two owners; the likes' rows are one server's.
    @Test func anImportThatReadsTheLikesAfterThePostsGivesThemOneServersOwners() throws {
        let (_, citus, _) = try makeStores()
        let trees = [
            try generate(GeneratorOptions(users: 120, seed: 4)).json, ParallelImportTests.likesTree(sharedKey: false),
            ParallelImportTests.likesTree(sharedKey: true),
        ]
        for (index, json) in trees.enumerated() {
            let single = try makeStore()
            try importJSON(json, into: single)
            let report = try importJSON(json, into: citus, options: ImportOptions(), jobs: 2)
            #expect(report.readersLockedOut == nil, "\(report.readersLockedOut ?? "")")
            #expect(report.sessions == 1)
            #expect(
                report.warnings.map(\.message).contains(
                    "2 loading sessions were asked for, but one loaded: the store is distributed (Citus), whose "
                        + "tables one session fills"))
            // Staged (and joined) only where a key has two owners.
            #expect(report.finishing.contains { $0.target == TreeTable.postLikes.name } == (index == 2))
            expectSameText(try exportJSON(citus), try exportJSON(single))
            let rows = { (store: Store) in
                try store.connection.query(
                    "SELECT post_owner_uid, post_key, liker_uid FROM post_likes ORDER BY 1, 2, 3"
                )
                .map { row in
                    try (0..<3).map { try row.decode(String.self, at: $0) }.joined(separator: " ")
                }
            }
            #expect(try rows(citus) == rows(single))
        }
    }

    /// Shapes of real exports that the generator does not write: all-digit uids and post keys (which export
    /// as arrays or sort as integers), push IDs that start with `-`, a megabyte value, canonically equivalent
    /// keys, control characters in text, an array and an epoch-keyed log under unmapped nodes, a post key two
    /// users share (its likes have a row per owner).
    static let realShapes: String = {
        let photo = String(repeating: "iVBORw0KGgoAAAANSUhEUgAA", count: 45_000)
        return #"""
            {"logs": {"1700000000000": "start", "1700000000001": {"level": 2}},
             "postLikes": {"-LkeyA": {"1": true, "0042": true}},
             "posts": {"1": {"-LkeyA": {"image_url": "data:image/png;base64,\#(photo)", "like_count": 2,
                                        "poster": {"uid": "1", "username": "one"}}},
                       "0042": {"-LkeyA": {"like_count": 2},
                                "7": {"image_url": "u", "like_count": 0, "poster": {"uid": "0042", "username": "z"}}}},
             "settings": ["a", "b", null, "d"],
             "users": {"0042": {"username": "zero\u001b[31m\u0007"}, "1": {"username": "one"},
                       "1700000000000": {"username": "é"}, "e\u0301": {"username": "e\u0301"},
                       "é": {"username": "tab\there"}}}
            """#
    }()

    /// `tree` imported into a store on one server and into one distributed over four shards.
    private static func importedBothWays(_ tree: String) throws -> (single: Store, citus: Store) {
        let single = try makeStore()
        try importJSON(tree, into: single)
        let database = try TestCitus.makeDatabase()
        let citus = Store(connection: try database.connect())
        try citus.migrate()
        _ = try citus.distribute(shardCount: 4)
        try importJSON(tree, into: citus)
        return (single, citus)
    }

    @Test(arguments: ["friendlypix", "real shapes"])
    func realExportsKeepEveryByteOnADistributedStore(_ name: String) throws {
        let tree =
            name == "real shapes"
            ? Self.realShapes
            : try String(
                contentsOf: fixtureDirectory.appendingPathComponent("friendlypix-console-export.json"), encoding: .utf8)
        let (single, citus) = try Self.importedBothWays(tree)
        expectSameText(try exportJSON(citus), try exportJSON(single))
        for path in [["users"], ["posts", "1"], ["postLikes", "-LkeyA"], ["settings"], ["logs"]] {
            var fromCitus: [UInt8] = []
            var fromSingle: [UInt8] = []
            _ = try citus.exportTree(at: path) { fromCitus.append(contentsOf: $0) }
            _ = try single.exportTree(at: path) { fromSingle.append(contentsOf: $0) }
            #expect(fromCitus == fromSingle, "\(path)")
        }
    }

    /// Limit queries read by pages (a LIMIT pushed down to the shards, then an OFFSET past a full page): over
    /// children holding more rows than a page, digit-led and dash-led keys among them, and with bounds, a
    /// distributed store answers as one server does, and as the reference does.
    @Test func limitQueriesGiveTheSingleServerAnswer() throws {
        let owners = ["alice": 3, "bob": 150, "zed": 70, "7up": 120, "9": 90, "-x": 64]
        let node = TreeValue.object(
            Dictionary(uniqueKeysWithValues: owners.map { (TreeKey($0.key), numberedPosts($0.value)) }))
        let (single, citus) = try Self.importedBothWays(TreeValue.object(["posts": node]).json)
        let queries =
            [1, 3, 5].flatMap { [TreeQuery(order: .key, limitToFirst: $0), TreeQuery(order: .key, limitToLast: $0)] }
            + [
                TreeQuery(order: .key, start: .string("b"), limitToFirst: 2),
                TreeQuery(order: .key, end: .string("bob"), limitToLast: 2),
            ]
        for query in queries {
            var fromCitus: [UInt8] = []
            var fromSingle: [UInt8] = []
            _ = try citus.exportTree(at: ["posts"], query: query) { fromCitus.append(contentsOf: $0) }
            _ = try single.exportTree(at: ["posts"], query: query) { fromSingle.append(contentsOf: $0) }
            #expect(fromCitus == fromSingle, "\(query)")
            expectSameText(String(decoding: fromCitus, as: UTF8.self), render(ReferenceQuery.run(query, on: node)))
        }
    }

    /// The shards use the key-order indexes as one server does. The coordinator sends the key functions'
    /// bodies inlined, as text: a body resolved with its parameter's default collation gave the workers another
    /// tree than their indexes' (migration 0020), and each shard scanned and sorted.
    @Test func shardsAnswerKeyOrderQuestionsFromTheirIndexes() throws {
        let (_, citus, _) = try makeStores()
        for (table, question, plan) in try ExportShapeTests.keyOrderPlans(on: citus) {
            #expect(plan.contains("Task"), "\(plan)")
            #expect(plan.contains("\(table.name)_key_order_"), "\(table.name) \(question): \(plan)")
            if question == "misordered" { #expect(plan.contains("Index Cond"), "\(plan)") }
        }
    }

    /// A read below a root asks whether its node holds keys needing RTDB order of that node's rows: one shard
    /// answers where the node's key is the table's distribution column, and the reads are one server's.
    @Test func aNodesKeyOrderQuestionGoesToOneShard() throws {
        let (single, citus) = try Self.importedBothWays(ExportShapeTests.neighbours)
        try ExportShapeTests.expectEveryNodeReadsInOrder(citus, ExportShapeTests.neighbours)
        try ExportShapeTests.expectEveryNodeReadsInOrder(single, ExportShapeTests.neighbours)
        let placed = try citus.connection.query(
            "SELECT table_name::text, distribution_column FROM citus_tables WHERE citus_table_type = 'distributed'")
        let columns = Dictionary(
            uniqueKeysWithValues: try placed.map {
                (try $0.decode(String.self, at: 0), try $0.decode(String.self, at: 1))
            })
        var routed = 0
        for table in TreeTable.allCases where table.keyDepth >= 2 && columns[table.name] == table.keyColumns[0] {
            let plan = try citus.connection.query("EXPLAIN \(table.orderedRowsQuery(under: ["u1"]))")
                .map { try $0.decode(String.self, at: 0) }.joined(separator: "\n")
            #expect(plan.contains("Task Count: 1"), "\(table.name): \(plan)")
            routed += 1
        }
        #expect(routed >= 5)
    }

    /// On Citus a post with few followers sends their entries as rows, one with many has the coordinator select
    /// them: both reach every timeline as on one server.
    @Test func aPostReachesEveryFollowerOnADistributedStore() throws {
        let database = try TestCitus.makeDatabase()
        let citus = Store(connection: try database.connect())
        try citus.migrate()
        _ = try citus.distribute(shardCount: 4)
        try DomainOperationTests.expectPostsReachEveryFollower(citus)
    }

    @Test func writesKeepLikesPostKeysAndChatHoldersOnADistributedStore() throws {
        let database = try TestCitus.makeDatabase()
        let citus = Store(connection: try database.connect())
        try citus.migrate()
        _ = try citus.distribute(shardCount: 4)
        try importJSON(PostOwnershipTests.tree, into: citus)
        try expectDerivedRowsFollowTheTree(citus)
        try PostOwnershipTests.writePostsAndLikes(citus)
        try importJSON(PostOwnershipTests.chats, into: citus)
        try PostOwnershipTests.writeChats(citus)
    }

    /// Migration 0015 on a store distributed before it: likes get their owners and move into the users' group.
    @Test func aStoreDistributedBeforeLikesHadOwnersMovesThem() throws {
        let database = try TestCitus.makeDatabase()
        let citus = Store(connection: try database.connect())
        try citus.migrate(Migrator(migrations: Array(Migration.embedded.prefix { !$0.fileName.hasPrefix("0015") })))
        try citus.connection.execute(
            script: """
                INSERT INTO users (uid, username) VALUES ('a', 'a'), ('b', 'b');
                INSERT INTO posts (owner_uid, post_key, like_count) VALUES ('a', '1', 2), ('b', '1', 2), ('a', '2', 1);
                INSERT INTO post_likes (post_key, liker_uid) VALUES ('1', 'x'), ('1', 'y'), ('2', 'x'), ('9', 'z');
                """)
        // What the rows stand for (export needs the current schema, which the store reaches below).
        let single = try makeStore()
        try importJSON(
            """
            {"postLikes":{"1":{"x":true,"y":true},"2":{"x":true},"9":{"z":true}},\
            "posts":{"a":[null,{"like_count":2},{"like_count":1}],"b":[null,{"like_count":2}]},\
            "users":{"a":{"username":"a"},"b":{"username":"b"}}}
            """, into: single)
        for planned in Store.distributionPlan where !Store.lookupTables.contains(planned.name) {
            let (column, group): (String?, String?) =
                switch planned.placement {
                case .reference: (nil, nil)
                case .distributed(let column, let group):
                    planned.name == "post_likes" ? ("post_key", nil) : (column, group)
                }
            if let column, let group {
                try citus.connection.execute(
                    "SELECT create_distributed_table(\(planned.name)::regclass, \(column), colocate_with => \(group))")
            } else if let column {
                try citus.connection.execute(
                    """
                    SELECT create_distributed_table(\(planned.name)::regclass, \(column), colocate_with => 'none', \
                    shard_count => 4)
                    """)
            } else {
                try citus.connection.execute("SELECT create_reference_table(\(planned.name)::regclass)")
            }
        }
        try citus.migrate()
        let state = try citus.distributionState()
        #expect(state.isDistributed)
        let likes = try #require(state.tables.first { $0.name == "post_likes" })
        #expect(likes.column == "post_owner_uid")
        #expect(likes.colocationID == state.tables.first { $0.name == "users" }?.colocationID)
        try expectDerivedRowsFollowTheTree(citus)
        expectSameText(try exportJSON(citus), try exportJSON(single))
        #expect(try citus.distribute().allSatisfy { !$0.changed })
    }

    @Test func aWorkerIsRefusedAndNamesTheCoordinator() throws {
        let (_, _, database) = try makeStores()
        let worker = Store(connection: try Connection(conninfo: database.workers[0]))
        #expect(try worker.distributionState().role == .worker)
        let error = try #require(throws: StorageError.self) { try worker.migrationState() }
        #expect(error.kind == .distribution)
        #expect(error.hint?.contains(":5432") == true)
        #expect(throws: StorageError.self) { try worker.migrate() }
    }

    @Test func appOperationsGiveTheSingleServerResults() throws {
        let (single, citus, _) = try makeStores()
        let uids = try single.connection.query("SELECT uid FROM users ORDER BY uid LIMIT 3").map {
            try $0.decode(String.self, at: 0)
        }
        let post = try single.connection.query(
            "SELECT post_key FROM posts WHERE owner_uid <> \(uids[0]) ORDER BY post_key LIMIT 1")[0]
            .decode(String.self, at: 0)
        for store in [single, citus] {
            _ = try store.follow(uids[0], uids[1])
            _ = try store.follow(uids[1], uids[0])
        }
        #expect(try citus.follow(uids[0], uids[2]) == (try single.follow(uids[0], uids[2])))
        #expect(try citus.follow(uids[0], uids[2]).changed == false, "a repeated follow adds nothing")
        #expect(try citus.like(uids[0], post: post) == (try single.like(uids[0], post: post)))
        #expect(try citus.like(uids[0], post: post) == (try single.like(uids[0], post: post)))
        #expect(try citus.unlike(uids[1], post: post) == (try single.unlike(uids[1], post: post)))
        #expect(try citus.timeline(of: uids[0], limit: 7) == (try single.timeline(of: uids[0], limit: 7)))
        let clock = { Date(timeIntervalSince1970: 1_700_000_100) }
        let sentSingle = try single.sendMessage(from: uids[0], to: uids[1], text: "hi", clock: clock)
        let sentCitus = try citus.sendMessage(from: uids[0], to: uids[1], text: "hi", clock: clock)
        #expect(sentCitus.createdChat == sentSingle.createdChat)
        #expect(sentCitus.chat.members == sentSingle.chat.members)
        #expect(sentCitus.chat.lastMessage == sentSingle.chat.lastMessage)
        #expect(try citus.unfollow(uids[0], uids[2]) == (try single.unfollow(uids[0], uids[2])))
        // Push IDs are random past their time prefix: the new chat's and message's keys are the only difference.
        let citusExport = try exportJSON(citus)
            .replacingOccurrences(of: sentCitus.chat.key, with: sentSingle.chat.key)
            .replacingOccurrences(of: sentCitus.message.key, with: sentSingle.message.key)
        expectSameText(citusExport, try exportJSON(single))
    }

    @Test func eachCheckFindsWhatASingleServerFinds() throws {
        let (single, citus, _) = try makeStores()
        for check in IntegrityCheck.allCases {
            let want = try single.check([check], examples: 20)
            // No export holds a hidden value: that check is compared on planted rows below.
            #expect(
                want.allSatisfy { $0.violations > 0 } || check == .hiddenValues,
                "\(check.rawValue): the tree plants violations of each check")
            let got = try citus.check([check], examples: 20)
            #expect(got.map(\.violations) == want.map(\.violations), "\(check.rawValue)")
            #expect(got.map(\.examples) == want.map(\.examples), "\(check.rawValue)")
        }
    }

    @Test func hiddenValuesAreFoundAndRemovedAsOnASingleServer() throws {
        let (single, citus, _) = try makeStores()
        try plantHiddenValues(in: single)
        try plantHiddenValues(in: citus)
        let want = try single.check([.hiddenValues], examples: 20)
        #expect(want.first?.violations == 5)
        let got = try citus.check([.hiddenValues], examples: 20)
        #expect(got.map(\.violations) == want.map(\.violations))
        #expect(got.map(\.examples) == want.map(\.examples))
        #expect(try citus.repair(.hiddenValues).changes == (try single.repair(.hiddenValues)).changes)
        expectSameText(try exportJSON(citus), try exportJSON(single))
        #expect(try citus.check([.hiddenValues]).first?.violations == 0)
    }

    /// Every read beside `distribute`, as the reads-of-one-instant suite runs them beside the other writers: each
    /// starts while distribute holds its locks (done, not committed) and answers as the store was before or as it
    /// is after, or refuses as documented (check without --wait).
    @Test func readsBesideDistributeAnswerBeforeOrAfter() throws {
        typealias Reader = ReadSnapshotTests.Reader
        let database = try TestCitus.makeDatabase()
        let setup = Store(connection: try database.connect())
        try setup.migrate()
        let base = try ReadSnapshotTests.Base.importing(into: setup, database: nil)
        let readers = Reader.allCases.filter { !$0.writes }
        let before = try Dictionary(uniqueKeysWithValues: readers.map { ($0, try $0.answer(setup, base)) })
        let control = Store(connection: try database.connect())
        let writer = Store(connection: try database.connect())
        let outcomes = Mutex<[Reader: Result<String, any Error>]>([:])
        let group = DispatchGroup()
        try writer.connection.withTransaction {
            _ = try writer.distribute(shardCount: 4)
            for reader in readers {
                let store = Store(connection: try database.connect())
                let pid = try ReadSnapshotTests.backendPID(store)
                nonisolated(unsafe) let reading = store
                group.enter()
                Thread.detachNewThread {
                    let answer = Result { try reader.answer(reading, base) }
                    outcomes.withLock { $0[reader] = answer }
                    group.leave()
                }
                let started = try ReadSnapshotTests.waitUntil(pid, control: control) {
                    outcomes.withLock { $0[reader] != nil }
                }
                #expect(started, "\(reader.rawValue) beside distribute: neither waited nor finished")
            }
        }
        #expect(group.wait(timeout: .now() + 120) == .success, "a reader never finished")
        for reader in readers {
            let after = try reader.answer(control, base)
            switch try #require(outcomes.withLock { $0[reader] }) {
            case .success(let answer):
                #expect(answer == before[reader] || answer == after, "\(reader.rawValue) beside distribute")
            case .failure(let error):
                #expect(reader.isDocumentedRefusal(error), "\(reader.rawValue) beside distribute failed: \(error)")
            }
        }
    }

    /// Each repair run alone (and batched, for those that batch) changes the rows a single server changes and
    /// leaves the same tree.
    @Test(arguments: Repair.allCases.filter { $0 != .chatMerge })
    func eachRepairLeavesWhatASingleServerLeaves(repair: Repair) throws {
        let (single, citus, _) = try makeStores()
        let want = try single.repair(repair)
        let got = try citus.repair(repair)
        #expect(got.changes.map(\.rows) == want.changes.map(\.rows))
        expectSameText(try exportJSON(citus), try exportJSON(single))
        #expect(try citus.repair(repair).rowsChanged == 0, "idempotent")
        if repair.isBatchable {
            let (single, citus, _) = try makeStores()
            let want = try single.repair(repair, options: RepairOptions(batchSize: 50))
            let got = try citus.repair(repair, options: RepairOptions(batchSize: 50))
            #expect(got.rowsChanged == want.rowsChanged)
            expectSameText(try exportJSON(citus), try exportJSON(single))
        }
    }

    /// `status` on a distributed store: one server's counts, at 4 and at 32 shards, and inside a transaction of the
    /// caller's.
    @Test func statusCountsWhatOneServerCounts() throws {
        for shardCount in [4, nil] as [Int?] {
            let (single, citus, _) = try importedOnOneServerAndDistributed(Self.tree, shardCount: shardCount)
            let expected = try single.status().tableRows.map { "\($0.table) \($0.rows)" }
            #expect(expected.count == 12)
            #expect(try citus.status().tableRows.map { "\($0.table) \($0.rows)" } == expected)
            let inside = try citus.connection.withTransaction(isolation: .repeatableRead, readOnly: true) {
                try citus.status().tableRows.map { "\($0.table) \($0.rows)" }
            }
            #expect(inside == expected)
        }
    }

    /// The timeline checks and repair, whose statements on Citus ship the posts grouped (by key with their owners,
    /// by owner with their keys), against one server's plain lists on every damaged shape: an entry naming another
    /// poster than the post's owner or none, a key two owners share, a follow kept as an unmapped value, missing,
    /// foreign and orphaned entries; the repair for the whole store and for one user.
    @Test func theTimelineChecksAndRepairFindAndChangeWhatASingleServerDoes() throws {
        let shapes: [(String, TreeValue)] =
            injections.filter { injection in
                injection.expected.keys.contains { [.timelineMissing, .timelineExtra, .orphans].contains($0) }
            }
            .map { ($0.name, $0.damage(consistentTree)) } + damagedTimelines
        var changed = 0
        for (name, tree) in shapes {
            for user in [nil, "carol"] as [String?] {
                let (single, citus, _) = try importedOnOneServerAndDistributed(tree.json)
                if user == nil {
                    let checks = { (store: Store) in
                        try store.check([.timelineMissing, .timelineExtra, .orphans], examples: 10).map {
                            "\($0.check.rawValue) \($0.violations) \($0.examples)"
                        }
                    }
                    #expect(try checks(citus) == checks(single), "\(name)")
                }
                let options = RepairOptions(user: user)
                let want = try single.repair(.timelines, options: options)
                let got = try citus.repair(.timelines, options: options)
                #expect(got.changes.map(\.rows) == want.changes.map(\.rows), "\(name), user \(user ?? "all")")
                expectSameText(try exportJSON(citus), try exportJSON(single))
                changed += want.rowsChanged
            }
        }
        #expect(changed > 20, "the shapes hold entries to change")
    }

    /// `repair follows --prefer following|followers` deletes the unmirrored side's edges before adding mirrors.
    @Test(arguments: [FollowPreference.following, .followers])
    func followRepairsPreferringOneSideLeaveWhatASingleServerLeaves(preference: FollowPreference) throws {
        let (single, citus, _) = try makeStores()
        let options = RepairOptions(followPreference: preference)
        let want = try single.repair(.follows, options: options)
        let got = try citus.repair(.follows, options: options)
        #expect(want.rowsChanged > 0)
        #expect(got.changes.map(\.rows) == want.changes.map(\.rows))
        expectSameText(try exportJSON(citus), try exportJSON(single))
    }

    /// The follow repair's MERGEs (typed edges, then unmapped ones) against one server with every preference, on
    /// edges missing their mirror on either side, typed or kept as unmapped values, and mirrors kept unmapped.
    @Test(arguments: [FollowPreference.union, .following, .followers])
    func followRepairsOfUnmappedEdgesLeaveWhatASingleServerLeaves(preference: FollowPreference) throws {
        let damaged = consistentTree.removing("followers/bob/alice").setting("followers/carol/bob", "true")
            .setting("following/bob/alice", #"{"since": 1500000000}"#)
            .setting("followers/alice/dave", #""yes""#)
            .setting("following/carol/alice", #""yes""#)
        let (single, citus, _) = try importedOnOneServerAndDistributed(damaged.json)
        let options = RepairOptions(followPreference: preference)
        let want = try single.repair(.follows, options: options)
        let got = try citus.repair(.follows, options: options)
        #expect(want.rowsChanged >= 2, "\(preference)")
        #expect(got.changes.map(\.rows) == want.changes.map(\.rows), "\(preference)")
        expectSameText(try exportJSON(citus), try exportJSON(single))
        #expect(try citus.check([.followAsymmetric])[0].isClean == single.check([.followAsymmetric])[0].isClean)
    }

    /// `chat merge --all` moves messages between chat keys, which on Citus are distribution values.
    @Test func mergingDuplicateChatsLeavesWhatASingleServerLeaves() throws {
        let (single, citus, _) = try makeStores()
        let want = try single.mergeDuplicateChats(keeping: .newest)
        let got = try citus.mergeDuplicateChats(keeping: .newest)
        #expect(want.rowsChanged > 0)
        #expect(got.changes.map(\.rows) == want.changes.map(\.rows))
        expectSameText(try exportJSON(citus), try exportJSON(single))
        #expect(try citus.check([.chatDuplicates]).allSatisfy(\.isClean))
    }

    @Test func checkAndFixLeavesWhatASingleServerLeaves() throws {
        let (single, citus, _) = try makeStores()
        let want = try single.checkAndFix()
        let got = try citus.checkAndFix()
        #expect(got.before.map(\.violations) == want.before.map(\.violations))
        #expect(got.repairs.map { $0.changes.map(\.rows) } == want.repairs.map { $0.changes.map(\.rows) })
        #expect(got.after.map(\.violations) == want.after.map(\.violations))
        expectSameText(try exportJSON(citus), try exportJSON(single))
    }

    @Test func realtimeEventsReachTheCoordinatorsListeners() throws {
        let (_, citus, database) = try makeStores()
        let uids = try citus.connection.query("SELECT uid FROM users ORDER BY uid LIMIT 2").map {
            try $0.decode(String.self, at: 0)
        }
        _ = try citus.follow(uids[0], uids[1])
        // One connection per watch: each reads its connection's notifications, and drops other channels'.
        let chats = try Store(connection: try database.connect()).watchChats(of: uids[1])
        let sent = try citus.sendMessage(from: uids[0], to: uids[1], text: "over the wire")
        let messages = try Store(connection: try database.connect()).watchMessages(in: sent.chat.key)
        _ = try citus.sendMessage(from: uids[0], to: uids[1], text: "and again")
        var changes: [ChatChange] = []
        for _ in 0..<20 where changes.isEmpty { changes += try chats.next(waitingAtMost: 0.5) }
        #expect(changes.contains { $0.uid == uids[1] })
        var heard: [Message] = []
        for _ in 0..<20 where heard.isEmpty { heard += try messages.next(waitingAtMost: 0.5) }
        #expect(heard.map(\.content) == ["and again"])
    }
}

extension CitusTests {
    /// A sync of a newer file makes on a distributed store what it makes on one server, and keeps the likes'
    /// owners and the lookups right.
    @Test func aSyncOfANewerFileMakesWhatItMakesOnOneServer() throws {
        let (single, citus, _) = try makeStores()
        var tree = try #require(try TreeValue.parse(json: Self.tree))
        // A later day: the first user's posts gone, a new like, a follow less.
        let firstPoster = try #require(
            tree.children?[TreeKey("posts")]?.children?.keys.sorted { $0.string < $1.string }.first)
        tree = tree.removing(["posts", firstPoster.string]) ?? tree
        let newer = tree.setting("postLikes/-Psync/u_sync", "true").json
        for store in [single, citus] {
            let report = try store.sync(opening: { MemorySource(newer) })
            #expect(report.rewrites > 0)
            #expect(try store.sync(opening: { MemorySource(newer) }).rewrites == 0)
        }
        expectSameText(try exportJSON(citus), try exportJSON(single))
        for (check, other) in zip(try citus.check(examples: 3), try single.check(examples: 3)) {
            #expect(check.violations == other.violations, "\(check.check.rawValue)")
        }

        // Later still: every user renamed and a value kept unmapped under each, hundreds of paths, which Citus
        // deletes a statement per table for the whole batch rather than statements per path.
        var later = tree.setting("postLikes/-Psync/u_sync", "true")
        let users = try #require(tree.children?[TreeKey("users")]?.children?.keys)
        #expect(users.count >= 128)
        for user in users {
            later = later.setting("users/\(user.string)/username", #""renamed \#(user.string)""#)
                .setting("users/\(user.string)/badges", #"{"early": true}"#)
        }
        for store in [single, citus] {
            #expect(try store.sync(opening: { MemorySource(later.json) }).rewrites >= users.count)
            #expect(try store.sync(opening: { MemorySource(later.json) }).rewrites == 0)
        }
        expectSameText(try exportJSON(citus), try exportJSON(single))
        expectSameText(try exportJSON(citus), try exportJSON(try consistentStore(later)))
    }
}
