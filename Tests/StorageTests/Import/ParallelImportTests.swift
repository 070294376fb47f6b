import FirebaseTree
import Foundation
import PostgresClient
import PostgresTestSupport
import Synchronization
import Testing
import TreeTestSupport

@testable import Storage

/// A whole-tree import over several sessions (`ImportOptions.jobs`), each reading the file and loading the
/// top-level nodes it reaches first: the store, the report and every failure are those of one session.
@Suite("Parallel import")
struct ParallelImportTests {
    /// What an import of `json` gives: the export, the report's lines and nodes, the checks, the rows the store
    /// derives from the tree (the lookups, the likes' owners) and every table's indexes, the indexes and statistics
    /// the report counts, or the error.
    struct Outcome: Equatable {
        var export: String
        var lines: [String]
        var warnings: Int
        var checks: [String]
        var derived: [String]
        /// The indexes built and the tables analyzed after the reading, as the report counts them.
        var finished: [String]
        /// Whether the likes were staged and joined with the posts after the reading, rather than sent with
        /// their owners.
        var stagedLikes: Bool
    }

    /// Imports `json` into a fresh store over `jobs` sessions (the file read again from memory), the likes'
    /// owners held in at most `ownersBudget` bytes; nil `jobs`: one session without `reopening`, which reads the
    /// file once, in order, and stages the likes.
    private func outcome(of json: String, jobs: Int?, ownersBudget: Int? = nil, into store: Store? = nil) throws
        -> Outcome
    {
        let store = try store ?? makeStore()
        let bytes = Array(json.utf8)
        let reopening: @Sendable () throws -> any ByteSource = { MemorySource(bytes, chunkSize: 6_007) }
        var options = ImportOptions(jobs: jobs ?? 1)
        if let ownersBudget { options.likeOwnersMemoryBudget = ownersBudget }
        let report = try store.importTree(
            from: MemorySource(bytes, chunkSize: 7_919), options: options, reopening: jobs == nil ? nil : reopening)
        #expect(report.inputBytes == bytes.count)
        let lines =
            report.lines.map { "\($0.node) \($0.table) \($0.rowsRead) \($0.rowsImported) \($0.bytes)" }
            + report.nodes.map { "\($0.name) \($0.inputBytes) \($0.rejected)" }
        let derived = try store.connection.query(
            """
            SELECT 'post_keys ' || post_key || ' ' || owner_uid FROM post_keys
            UNION ALL SELECT 'chat_holders ' || chat_key || ' ' || uid FROM chat_holders
            UNION ALL SELECT 'post_likes ' || post_owner_uid || ' ' || post_key || ' ' || liker_uid FROM post_likes
            UNION ALL SELECT 'index ' || indexdef FROM pg_indexes WHERE schemaname = current_schema()
            ORDER BY 1
            """
        ).map { try $0.decode(String.self, at: 0) }
        return Outcome(
            export: try exportJSON(store), lines: lines, warnings: report.warningCount,
            checks: try store.check(examples: 3).map { "\($0.check.rawValue) \($0.violations) \($0.examples)" },
            derived: derived,
            finished: report.finishing.filter {
                [ImportReport.Finishing.indexes, ImportReport.Finishing.statistics].contains($0.target)
            }
            .map { "\($0.target) \($0.count)" },
            stagedLikes: report.finishing.contains { $0.target == TreeTable.postLikes.name })
    }

    /// The schemas of parallel sessions left in `store`'s database.
    /// An operator's index on users whose build takes `secondsPerRow` a row: `users_slow`.
    static func addSlowIndex(to store: Store, secondsPerRow: Double) throws {
        // A function body takes no parameters; the number is the test's own.
        try store.connection.execute(
            script: """
                CREATE FUNCTION slow_key(u text) RETURNS text IMMUTABLE LANGUAGE plpgsql AS $$
                BEGIN PERFORM pg_sleep(\(secondsPerRow)); RETURN u; END $$;
                CREATE INDEX users_slow ON users (slow_key(uid));
                """)
    }

    private func helperSchemas(_ store: Store) throws -> [String] {
        try store.connection.query(
            "SELECT nspname FROM pg_namespace WHERE starts_with(nspname, \(SideTables.helperSchemaPrefix))"
        ).map { try $0.decode(String.self, at: 0) }
    }

    static let trees: [(name: String, json: String)] = {
        var trees: [(String, String)] = []
        for (users, seed) in [(40, 31), (7, 32)] as [(Int, UInt64)] {
            if let json = try? generate(GeneratorOptions(users: users, seed: seed, plantsAnomalies: true)).json {
                trees.append(("generated, \(users) users", json))
            }
        }
        if let fixture = try? String(
            contentsOf: fixtureDirectory.appendingPathComponent("friendlypix-console-export.json"), encoding: .utf8)
        {
            trees.append(("the friendlypix console export", fixture))
        }
        for seed in 0..<8 {
            var random = RandomTree(seed: seed + 1_700)
            trees.append(("random tree \(seed)", random.json(random.database())))
        }
        // Top-level keys written twice (the last wins, the earlier one's rows go), a node of nothing but nulls,
        // unknown nodes between known ones, a leaf and an array at the top level, push IDs and digit keys.
        trees.append(
            (
                "repeated and odd top-level nodes",
                #"""
                {"users": {"a": {"username": "first"}, "b": {"username": "b"}}, "misc": [1, 2, {"x": null}],
                 "postLikes": {"-Kp0": {"a": true}}, "gone": {"x": null}, "motd": "hi",
                 "users": {"a": {"username": "second"}}, "0": {"1": true}, "postLikes": {"-Kp1": {"b": true}},
                 "posts": {"a": {"-Kp1": {"image_url": "u", "like_count": 1}}}, "misc": {"y": 2},
                 "timeline": {"a": {"-Kp1": {"poster_uid": "a"}}}, "users": {"c": {"username": "third"}}}
                """#
            ))
        trees.append(("likes and their owners", likesTree(sharedKey: false)))
        trees.append(("a post key two owners share", likesTree(sharedKey: true)))
        return trees
    }()

    /// Likes read after the posts that own them: keys with a backslash, a tab escape, non-ASCII and digits;
    /// likes of no post (owner ''); /postLikes written three times around /posts (a leaf, then an object that
    /// a later one replaces, each with a key repeated after more likes than one COPY message holds), and, when
    /// `sharedKey`, a post key two owners share (every like then has a row per owner: they are staged).
    static func likesTree(sharedKey: Bool) -> String {
        let many = (0..<3_000).map { #""-Km\#($0)": {"u1": true, "u\\2": true}"# }.joined(separator: ", ")
        let shared = sharedKey ? #", "-Kshared": {"image_url": "s", "like_count": 1}"# : ""
        return #"""
            {"postLikes": 7, "users": {"u1": {"username": "one"}, "u\\2": {"username": "two"}},
             "postLikes": {\#(many), "-Km1": {"u1": true}, "gone": {"u1": true}},
             "posts": {"u1": {"-Km1": {"image_url": "a", "like_count": 1}, "-Kshared": {"image_url": "t"},
                              "é-\\tK": {"image_url": "c"}},
                       "u\\2": {"-Km2": {"image_url": "b"}, "12": {"image_url": "d"}\#(shared)}},
             "postLikes": {\#(many), "-Km1": {"u\\2": true}, "-Km2": {"u1": true}, "-Kshared": {"u1": true},
                           "é-\\tK": {"u1": true, "u\\2": true}, "12": {"u1": true}, "nopost": {"u1": true},
                           "-Km3": {"u1": true}, "-Km3": {"u\\2": true}},
             "timeline": {"u1": {"-Km2": {"poster_uid": "u\\2"}}}}
            """#
    }

    @Test func severalSessionsLoadWhatOneSessionLoads() throws {
        for (name, json) in Self.trees {
            let single = try outcome(of: json, jobs: nil)
            // One session that reads the likes last, several, and several whose likes' owners do not fit in
            // memory (staged, as the single reading does).
            for (jobs, budget) in [(1, nil), (2, nil), (3, nil), (2, 0)] as [(Int, Int?)] {
                let parallel = try outcome(of: json, jobs: jobs, ownersBudget: budget)
                let label = "\(name), \(jobs) sessions, budget \(budget.map(String.init) ?? "default")"
                #expect(parallel.export.utf8.elementsEqual(single.export.utf8), "\(label): export")
                #expect(parallel.lines == single.lines, "\(label): report")
                #expect(parallel.warnings == single.warnings, "\(label): warnings")
                #expect(parallel.checks == single.checks, "\(label): checks")
                #expect(parallel.derived == single.derived, "\(label): lookups and likes")
                // Two sessions that both wrote a table both built its index: still one index of the store.
                #expect(parallel.finished == single.finished, "\(label): indexes and statistics")
            }
        }
    }

    @Test func likesGoWithTheirOwnersWhereTheOwnersAreKnownAndFitInMemory() throws {
        let owned = Self.likesTree(sharedKey: false)
        let shared = Self.likesTree(sharedKey: true)
        // A file read once stages its likes; read again, they wait for the posts, and are staged only when a
        // key has two owners or the owners do not fit.
        for (json, jobs, budget, staged) in [
            (owned, nil, nil, true), (owned, 1, nil, false), (owned, 2, nil, false), (owned, 2, 0, true),
            (owned, 1, 100, true), (shared, 1, nil, true), (shared, 2, nil, true),
        ] as [(String, Int?, Int?, Bool)] {
            let outcome = try outcome(of: json, jobs: jobs, ownersBudget: budget)
            #expect(outcome.stagedLikes == staged, "\(jobs.map(String.init) ?? "read once"), budget \(budget ?? -1)")
            #expect(outcome.derived.contains("post_likes u1 -Km1 u\\2"))
            #expect(outcome.derived.contains("post_likes  nopost u1"))
        }
    }

    /// More sessions than the server has connections for load over those it has, keeping one free, and the report
    /// says so; with no room beside the import's own, that one loads alone.
    @Test func sessionsBeyondTheConnectionLimitsAreNotOpened() throws {
        let json = try generate(GeneratorOptions(users: 20, seed: 5)).json
        let reference = try makeStore()
        try importJSON(json, into: reference)
        for (limit, expected) in [
            (
                4,
                "8 loading sessions were asked for, but the server had room for 3 more connections (its connection limits): 2 loaded, leaving one for whoever connects next"
            ),
            (
                2,
                "8 loading sessions were asked for, but the server had room for 1 more connection (its connection limits): the import's own session loaded alone, leaving one for whoever connects next"
            ),
        ] {
            let store = try makeStore()
            try store.connection.execute(
                Query(
                    stringLiteral:
                        "DO $$ BEGIN EXECUTE format('ALTER DATABASE %I CONNECTION LIMIT \(limit)', current_database()); END $$"
                ))
            let report = try importJSON(json, into: store, options: ImportOptions(), jobs: 8)
            #expect(report.warnings.map(\.message) == [expected])
            #expect(report.sessions == (limit == 4 ? 2 : 1))
            expectSameText(try exportJSON(store), try exportJSON(reference))
        }
        // Within the limits, nothing to say.
        let report = try importJSON(json, into: try makeStore(), options: ImportOptions(), jobs: 2)
        #expect(report.warnings.isEmpty && report.sessions == 2)
    }

    /// Sessions asked for where only one can load (a dry run, rejects let through, a file that cannot be read
    /// again, a merge or a node's import) are a warning of the report, the import otherwise the same; the default
    /// of one a core, which nobody asked for, says nothing.
    @Test func sessionsAskedForWhereOneLoadsAreAWarning() throws {
        let json = try generate(GeneratorOptions(users: 12, seed: 3)).json
        let bytes = Array(json.utf8)
        let reference = try makeStore()
        try importJSON(json, into: reference)
        let cases: [(String, ImportOptions, Bool, String)] = [
            ("dry run", ImportOptions(isDryRun: true), true, "a dry run loads on one session"),
            (
                "rejects let through", ImportOptions(maximumRejects: 5), true,
                "an import that lets rejects through loads on one session"
            ),
            (
                "read once", ImportOptions(), false,
                "the input cannot be read again from its start (standard input, a pipe)"
            ),
            (
                "merge", ImportOptions(mode: .merge), true,
                "only a replace of the whole store loads on several sessions"
            ),
            (
                "a node", ImportOptions(at: ["users"]), true,
                "only a replace of the whole store loads on several sessions"
            ),
        ]
        for (label, base, canReopen, reason) in cases {
            for jobs in [3, nil] as [Int?] {
                let store = try makeStore()
                var options = base
                options.jobs = jobs
                let reopening: (@Sendable () throws -> any ByteSource)? =
                    canReopen ? { @Sendable in MemorySource(bytes, chunkSize: 5_003) } : nil
                let report = try store.importTree(
                    from: MemorySource(bytes, chunkSize: 4_099), options: options, reopening: reopening)
                let expected = jobs == nil ? [] : ["3 loading sessions were asked for, but one loaded: \(reason)"]
                #expect(report.warnings.map(\.message) == expected, "\(label), jobs \(jobs ?? 0)")
                #expect(report.sessions == 1, "\(label)")
                if !base.isDryRun, base.at.isEmpty {
                    expectSameText(try exportJSON(store), try exportJSON(reference))
                }
            }
        }
    }

    /// One session that reads the likes again says so (a progress display has no bytes left to show), and the
    /// reading is the node's in the report, not a step after the reading; sessions beside the import say nothing.
    @Test func aSessionReadingTheLikesAgainSaysSo() throws {
        let bytes = Array(Self.likesTree(sharedKey: false).utf8)
        for jobs in [1, 2] {
            var steps: [ImportStep] = []
            let report = try makeStore().importTree(
                from: MemorySource(bytes, chunkSize: 7_919), options: ImportOptions(jobs: jobs),
                reopening: { MemorySource(bytes, chunkSize: 6_007) },
                observer: ImportObserver(onStep: { steps.append($0) }))
            let announced = steps.filter { $0 == .readingAgain(key: "postLikes") }.count
            #expect(announced == (jobs == 1 ? 1 : 0), "\(jobs) sessions: \(steps)")
            #expect(!report.finishing.contains { $0.target == "post_likes" }, "\(report.finishing)")
            #expect(report.lines.contains { $0.node == "postLikes" && $0.rowsImported > 0 })
        }
    }

    /// While the sessions build indexes, the import says which (a progress display would otherwise sit at the
    /// file's end): the build that has run longest, numbered among all the import's builds, in ascending order.
    @Test func theSessionsBuildsAreShownAsTheyRun() throws {
        let bytes = Array(try generate(GeneratorOptions(users: 30, seed: 39)).json.utf8)
        let store = try makeStore()
        // An operator's index that takes a fiftieth of a second a row to build: long enough to be seen.
        try Self.addSlowIndex(to: store, secondsPerRow: 0.02)
        var steps: [ImportStep] = []
        let report = try store.importTree(
            from: MemorySource(bytes), options: ImportOptions(jobs: 2), reopening: { MemorySource(bytes) },
            observer: ImportObserver(onStep: { steps.append($0) }))
        let builds = steps.compactMap { step -> (name: String, number: Int, count: Int)? in
            guard case .buildingIndex(let name, let number, let count) = step else { return nil }
            return (name, number, count)
        }
        #expect(builds.contains { $0.name == "users_slow" }, "\(steps.map(\.description))")
        let indexes = try #require(report.finishing.first { $0.target == ImportReport.Finishing.indexes })
        #expect(builds.allSatisfy { 1 <= $0.number && $0.number <= $0.count && $0.count <= indexes.count })
        #expect(builds.map(\.number) == builds.map(\.number).sorted())
    }

    /// A compressed file loads over several sessions too, each decompressing it for itself, and gives what a plain
    /// one gives. The first source, which skips only by reading, is neither read nor skipped: pacing it would
    /// decompress the file once more than the sessions do.
    @Test func aCompressedFileLoadsOverSeveralSessions() throws {
        let json = try generate(GeneratorOptions(users: 30, seed: 41, plantsAnomalies: true)).json
        var compressed: [UInt8] = []
        let gzip = try GzipWriter { compressed.append(contentsOf: $0) }
        try Array(json.utf8).withUnsafeBufferPointer { try gzip.write($0) }
        try gzip.finish()
        let bytes = compressed
        let first = UntouchedSource(base: try GzipSource(MemorySource(bytes), name: "backup.json.gz"))
        let store = try makeStore()
        let report = try store.importTree(
            from: first, options: ImportOptions(jobs: 2),
            reopening: { try GzipSource(MemorySource(bytes, chunkSize: 4_099), name: "backup.json.gz") })
        #expect(report.sessions == 2 && report.warnings.isEmpty, "\(report.warnings)")
        #expect(first.touches == 0, "the first source was read or skipped")
        #expect(report.inputBytes == json.utf8.count)
        let plain = try outcome(of: json, jobs: 2)
        expectSameText(try exportJSON(store), plain.export)
        #expect(!first.skipsWithoutReading && MemorySource(bytes).skipsWithoutReading)
        // Cut at nine tenths, the stream fails every session, and the store stays as it was.
        let cut = Array(bytes.prefix(bytes.count * 9 / 10))
        let failure = #expect(throws: StorageError.self) {
            _ = try store.importTree(
                from: try GzipSource(MemorySource(cut), name: "cut.json.gz"), options: ImportOptions(jobs: 2),
                reopening: { try GzipSource(MemorySource(cut), name: "cut.json.gz") })
        }
        #expect(failure?.message.contains("cut.json.gz is truncated") == true, "\(String(describing: failure))")
        expectSameText(try exportJSON(store), plain.export)
        #expect(try helperSchemas(store) == [])
    }

    /// A session that reads on after another's build began (a loaded machine) moves the import's bytes on, and a
    /// progress display redraws its bar then: the build running is shown again after, not left under the bar.
    @Test func aBuildIsShownAgainAfterALateSessionMovesTheBytesOn() throws {
        let users = (0..<40).map { #""user\#($0)": {"username": "name \#($0)"}"# }
        let bytes = Array((#"{"users": {"# + users.joined(separator: ", ") + "}}").utf8)
        let store = try makeStore()
        try Self.addSlowIndex(to: store, secondsPerRow: 0.05)
        // The second session's file reads nothing until the first session's build is shown (or a minute passed):
        // the first claims /users, the second reads the file once the build runs.
        let gate = DispatchSemaphore(value: 0)
        let opened = Atomic(0)
        let events = Mutex<[String]>([])
        let source = CountingSource(
            base: MemorySource(bytes), onSkip: { count in events.withLock { $0.append(count > 0 ? "skip" : "end") } })
        _ = try store.importTree(
            from: source, options: ImportOptions(jobs: 2),
            reopening: {
                let late = opened.add(1, ordering: .relaxed).newValue == 2
                return LateSource(base: MemorySource(bytes), gate: late ? gate : nil)
            },
            observer: ImportObserver(onStep: { step in
                guard case .buildingIndex(let name, _, _) = step else { return events.withLock { $0.append("other") } }
                events.withLock { $0.append(name) }
                if name == "users_slow" { gate.signal() }
            }))
        let seen = events.withLock { $0 }
        let lastSkip = try #require(seen.lastIndex(of: "skip"), "\(seen)")
        #expect(seen.firstIndex(of: "users_slow").map { $0 < lastSkip } == true, "the gate opened on the build")
        #expect(seen.dropFirst(lastSkip + 1).first { $0 != "end" } == "users_slow", "\(seen)")
        // Its end is found once, not asked for again and again while the sessions build.
        #expect(seen.count { $0 == "end" } <= 1, "\(seen)")
    }

    @Test func aFailureAnywhereIsTheFailureOfOneSessionAndChangesNothing() throws {
        let json = try generate(GeneratorOptions(users: 30, seed: 33, plantsAnomalies: true)).json
        let store = try consistentStore()
        let before = try exportJSON(store)
        let bytes = Array(json.utf8)
        // A malformed byte in each of the file's tenths, and a key Firebase refuses at the top level.
        var broken: [[UInt8]] = (1..<10).map { tenth in
            var copy = bytes
            let at = bytes.count * tenth / 10
            copy.insert(contentsOf: Array(#""\#u{1}"#.utf8), at: at)
            return copy
        }
        broken.append(Array((String(json.dropLast()) + #", "bad.key": {"a": 1}}"#).utf8))
        // A key Firebase refuses in the likes (read last) and a malformed byte in the posts after them, and each
        // alone.
        let likes = try #require(json.range(of: #""postLikes":{"#)).upperBound
        let posts = try #require(json.range(of: #""posts":{"#)).upperBound
        let badLike = #""bad.like": {"a": true}, "#
        let badPost = #""\#u{1}"#
        for (like, post) in [(true, true), (true, false), (false, true)] {
            var text = json
            if post { text.insert(contentsOf: badPost, at: posts) }
            if like { text.insert(contentsOf: badLike, at: likes) }
            broken.append(Array(text.utf8))
        }
        for file in broken {
            var errors: [String] = []
            // nil: one session without reopening, which reads the file once, in order.
            let reopening: @Sendable () throws -> any ByteSource = { MemorySource(file, chunkSize: 4_093) }
            for jobs in [nil, 1, 2, 3] as [Int?] {
                do {
                    _ = try store.importTree(
                        from: MemorySource(file), options: ImportOptions(jobs: jobs ?? 1),
                        reopening: jobs == nil ? nil : reopening)
                    Issue.record("a broken file imported")
                } catch let error as StorageError {
                    errors.append("\(error.message) | \(error.context ?? "")")
                }
                expectSameText(try exportJSON(store), before)
                #expect(try helperSchemas(store) == [])
            }
            #expect(Set(errors).count == 1, "\(errors)")
        }
    }

    /// An index that cannot be built once the rows are in (an operator's, over an expression that fails on one
    /// row) fails the import, whichever session builds it and whenever: its sessions committed their tables to
    /// share the builds, and those go too.
    @Test func anIndexThatCannotBeBuiltFailsTheImportAndLeavesNothing() throws {
        var json = try generate(GeneratorOptions(users: 30, seed: 38)).json
        let users = try #require(json.range(of: #""users":{"#)).upperBound
        json.insert(contentsOf: #""zz-boom": {"username": "💥boom"}, "#, at: users)
        let bytes = Array(json.utf8)
        let store = try consistentStore()
        // Built on the store as it is; on the file's rows, division by zero at the user it plants.
        try store.connection.execute("CREATE INDEX users_fails ON users ((1 / (1 - strpos(username, '💥'))))")
        let before = try exportJSON(store)
        let reopening: @Sendable () throws -> any ByteSource = { MemorySource(bytes, chunkSize: 4_093) }
        for jobs in [nil, 1, 2, 3] as [Int?] {
            #expect(throws: StorageError.self, "\(jobs.map(String.init) ?? "read once") session(s)") {
                try store.importTree(
                    from: MemorySource(bytes), options: ImportOptions(jobs: jobs ?? 1),
                    reopening: jobs == nil ? nil : reopening)
            }
            expectSameText(try exportJSON(store), before)
            #expect(try helperSchemas(store) == [])
        }
        do {
            _ = try store.importTree(from: MemorySource(bytes), options: ImportOptions(jobs: 2), reopening: reopening)
            Issue.record("the import built an index that cannot be built")
        } catch let error as StorageError {
            #expect(error.message == "division by zero")
        }
    }

    @Test func cancellingStopsEverySessionAndLeavesNothing() throws {
        let json = try generate(GeneratorOptions(users: 400, seed: 34)).json
        let store = try consistentStore()
        let before = try exportJSON(store)
        let bytes = Array(json.utf8)
        // Ctrl-C as the sessions' loaders see it: at their first look, after a few thousand rows.
        let asked = Atomic<Int>(0)
        #expect(throws: StorageError.self) {
            try store.importTree(
                from: MemorySource(bytes), options: ImportOptions(jobs: 2), reopening: { MemorySource(bytes) },
                observer: ImportObserver(isCancelled: { asked.add(1, ordering: .relaxed).newValue >= 1 }))
        }
        #expect(asked.load(ordering: .relaxed) > 0)
        expectSameText(try exportJSON(store), before)
        #expect(try helperSchemas(store) == [])
    }

    /// Ctrl-C as the console sends it: cancel requests every few milliseconds until the command has ended, here
    /// from the moment the sessions build their indexes (committed tables). The cleanup those requests cause
    /// (dropping the sessions' schemas) is not cancelled by the requests that keep coming.
    @Test func cancelRequestsUntilTheEndDoNotStopTheCleanup() throws {
        let bytes = Array(try generate(GeneratorOptions(users: 200, seed: 40)).json.utf8)
        let store = try consistentStore()
        try Self.addSlowIndex(to: store, secondsPerRow: 0.05)
        let before = try exportJSON(store)
        let cancel = try #require(store.makeCanceller())
        let pressed = Atomic<Bool>(false)
        let ended = Atomic<Bool>(false)
        let stopped = DispatchSemaphore(value: 0)
        Thread {
            while !ended.load(ordering: .relaxed) {
                if pressed.load(ordering: .relaxed) { cancel() }
                usleep(200)
            }
            stopped.signal()
        }.start()
        let error = #expect(throws: StorageError.self) {
            defer { ended.store(true, ordering: .relaxed) }
            _ = try store.importTree(
                from: MemorySource(bytes), options: ImportOptions(jobs: 2), reopening: { MemorySource(bytes) },
                observer: ImportObserver(
                    isCancelled: { pressed.load(ordering: .relaxed) },
                    onStep: { step in
                        if case .buildingIndex("users_slow", _, _) = step { pressed.store(true, ordering: .relaxed) }
                    }))
        }
        stopped.wait()
        let wasPressed = pressed.load(ordering: .relaxed)
        #expect(wasPressed, "the build was seen")
        #expect(error?.sqlState == .queryCanceled, "\(String(describing: error))")
        #expect(try helperSchemas(store) == [])
        expectSameText(try exportJSON(store), before)
    }

    @Test func whatACrashedParallelImportLeftIsUnseenAndDroppedByTheNext() throws {
        let store = try consistentStore()
        let before = try exportJSON(store)
        // A helper's schema, committed, whose import died before it committed.
        try store.connection.execute(
            script: """
                CREATE SCHEMA \(SideTables.helperSchemaPrefix)dead_1;
                COMMENT ON SCHEMA \(SideTables.helperSchemaPrefix)dead_1 IS '\(SideTables.helperComment)';
                CREATE TABLE \(SideTables.helperSchemaPrefix)dead_1.users (LIKE public.users);
                INSERT INTO \(SideTables.helperSchemaPrefix)dead_1.users VALUES ('ghost', 'ghost', NULL);
                CREATE SCHEMA \(SideTables.helperSchemaPrefix)operators;
                """)
        expectSameText(try exportJSON(store), before)
        #expect(try store.check(examples: 3).allSatisfy { !$0.examples.contains { $0.contains("ghost") } })
        #expect(try !store.status().tableRows.isEmpty)
        let json = try generate(GeneratorOptions(users: 5, seed: 35)).json
        let bytes = Array(json.utf8)
        _ = try store.importTree(
            from: MemorySource(bytes), options: ImportOptions(jobs: 2), reopening: { MemorySource(bytes) })
        // The leftover went; a schema of the same prefix that is not a leftover (no mark) stays.
        #expect(try helperSchemas(store) == ["\(SideTables.helperSchemaPrefix)operators"])
        expectSameText(try exportJSON(store), try outcome(of: json, jobs: nil).export)
    }

    @Test func readersAnswerWhileTheSessionsLoad() throws {
        let database = try TestPostgres.makeDatabase()
        let before = try generate(GeneratorOptions(users: 10, seed: 36)).json
        let after = try generate(GeneratorOptions(users: 12, seed: 37)).json
        try importJSON(before, into: Store(connection: try database.connect()))
        let reader = Store(connection: try database.connect())
        try reader.setLockTimeout(.seconds(2))
        let beforeExport = try exportJSON(reader)
        // Each loading session's file stops at half until let go.
        let gates = [GatedSource(after), GatedSource(after)]
        let opened = Atomic<Int>(0)
        nonisolated(unsafe) let importing = Store(connection: try database.connect())
        let outcome = Mutex<Result<ImportReport, any Error>?>(nil)
        let finished = DispatchSemaphore(value: 0)
        Thread {
            let result = Result {
                try importing.importTree(
                    from: MemorySource(after), options: ImportOptions(jobs: 2),
                    reopening: {
                        // The session that loads the posts reads the file again for the likes, after them.
                        let count = opened.add(1, ordering: .relaxed).oldValue
                        return count < gates.count ? gates[count] : MemorySource(after)
                    })
            }
            outcome.withLock { $0 = result }
            finished.signal()
        }.start()
        for gate in gates {
            try #require(gate.reached.wait(timeout: .now() + 60) == .success, "a session never read half its file")
        }
        expectSameText(try exportJSON(reader), beforeExport)
        for gate in gates { gate.open.signal() }
        try #require(finished.wait(timeout: .now() + 120) == .success)
        _ = try #require(outcome.withLock { $0 }).get()
        expectSameText(try exportJSON(reader), try self.outcome(of: after, jobs: nil).export)
        #expect(try helperSchemas(reader) == [])
    }
}

/// A source that tells of each skip and how far it went (as a progress display counts them).
private struct CountingSource: ByteSource {
    var base: MemorySource
    let onSkip: (Int) -> Void

    mutating func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        try base.read(into: buffer)
    }

    mutating func skip(_ count: Int) throws -> Int {
        let skipped = try base.skip(count)
        onSkip(skipped)
        return skipped
    }

    var skipsWithoutReading: Bool { base.skipsWithoutReading }
}

/// A source that counts each read and skip made of it.
private final class UntouchedSource: ByteSource {
    var base: any ByteSource
    private(set) var touches = 0

    init(base: any ByteSource) { self.base = base }

    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        touches += 1
        return try base.read(into: buffer)
    }

    func skip(_ count: Int) throws -> Int {
        touches += 1
        return try base.skip(count)
    }

    var skipsWithoutReading: Bool { base.skipsWithoutReading }
}

/// A source whose first read waits for `gate` (at most a minute): a session that reads late.
private struct LateSource: ByteSource {
    var base: MemorySource
    let gate: DispatchSemaphore?

    mutating func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        if let gate {
            _ = gate.wait(timeout: .now() + 60)
            gate.signal()
        }
        return try base.read(into: buffer)
    }
}
