import Foundation
import PostgresTestSupport
import Testing
import TreeTestSupport

@testable import Storage

/// Inputs built to hurt: keys that Unicode calls equal, records larger than any memory budget.
@Suite("Hostile imports")
struct HostileImportTests {
    /// A record's memory budget small enough for quick tests; the benchmark measures the real one.
    static let budget = 64 << 10
    static let options = {
        var options = ImportOptions(); options.recordMemoryBudget = budget; return options
    }()

    /// `got` holds the tree `expected` holds, whatever its order and spacing; a difference is shown by its place
    /// in the canonical text, since these trees are large.
    private func expectSameTree(_ got: String, _ expected: String, sourceLocation: SourceLocation = #_sourceLocation)
        throws
    {
        func canonical(_ json: String) throws -> String {
            var writer = JSONTextWriter(options: .init())
            if let tree = try TreeValue.parse(json: json) { writer.value(tree) }
            writer.finish()
            return String(decoding: writer.bytes, as: UTF8.self)
        }
        expectSameText(try canonical(got), try canonical(expected), sourceLocation: sourceLocation)
    }

    @Test func canonicallyEquivalentKeysAreDistinctChildren() throws {
        // Firebase compares keys by code units: "é" (U+00E9) and "e" + U+0301 are two keys, as are the three Å.
        let json = #"""
            {"users": {"u1": {"username": "x", "\#u{E9}": 1, "e\#u{301}": 2},
                       "\#u{E9}": {"username": "precomposed"}, "e\#u{301}": {"username": "decomposed"}},
             "chats": {"u1": {"-C1": {"members": {"\#u{C5}": true, "A\#u{30A}": true, "\#u{212B}": true}}}},
             "misc": {"\#u{E9}": true, "e\#u{301}": false}}
            """#
        let store = try makeStore()
        let report = try importJSON(json, into: store)
        #expect(report.warningCount == 0)
        #expect(report.warnings.isEmpty)
        try expectSameTree(exportJSON(store), json)
        let users = try store.connection.query("SELECT count(*) FROM users").first!.decode(Int.self, at: 0)
        #expect(users == 3)
        let members = try store.connection.query("SELECT cardinality(members) FROM chats").first!.decode(
            Int.self, at: 0)
        #expect(members == 3)
    }

    /// A user whose extra fields are far over the budget a record may hold in memory: the typed column still
    /// gets its value, the rest is kept as unmapped values, and the export is the input.
    @Test func aRecordLargerThanTheMemoryBudgetIsKeptWhole() throws {
        let blob = String(repeating: "b", count: Self.budget / 3)
        var fields: [String] = [#"".priority": 7"#, #""photo": "\#(blob)""#]
        fields += (0..<4).map { #""f\#($0)": {"deep": {"a": "\#(blob)", "n": \#($0)}}"# }
        fields.append(#""username": "alice""#)
        fields += (0..<2000).map { #""k\#($0)": \#($0)"# }
        fields += [#""photo": "replaced""#, #""f2": "again""#]
        let json = #"{"users": {"u1": {\#(fields.joined(separator: ", "))}, "u2": {"username": "bob"}}}"#
        let store = try makeStore()
        let report = try importJSON(json, into: store, options: Self.options, chunkSize: 4096)
        #expect(report.rejects.isEmpty)
        #expect(report.warningCount == 2)
        let username = try store.connection.query("SELECT username FROM users WHERE uid = 'u1'").first?
            .decode(String.self, at: 0)
        #expect(username == "alice")
        let unmapped = try store.connection.query("SELECT count(*) FROM unmapped_values WHERE root = 'users'")
            .first!.decode(Int.self, at: 0)
        #expect(unmapped > 0)
        try expectSameTree(exportJSON(store), json)
    }

    @Test func aRecordWhoseFieldsAllSpillKeepsItsPriority() throws {
        let blob = String(repeating: "p", count: Self.budget + 1)
        let json = #"""
            {"users": {"u1": {".priority": "first", "avatar": "\#(blob)"}},
             "posts": {"-F1": {".priority": 3, "picture": "\#(blob)"}}}
            """#
        let store = try makeStore()
        try importJSON(json, into: store, options: Self.options)
        try expectSameTree(exportJSON(store), json)
        let rows = try store.connection.query("SELECT (SELECT count(*) FROM users), (SELECT count(*) FROM feed_posts)")
        #expect(try rows[0].decode(Int.self, at: 0) == 0)
        #expect(try rows[0].decode(Int.self, at: 1) == 0)
        let tree = try #require(try TreeValue.parse(json: exportJSON(store)))
        #expect(tree["users"]?["u1"]?[FirebaseKey.priority] == .string("first"))
        #expect(tree["posts"]?["-F1"]?[FirebaseKey.priority] == .number(3))
    }

    @Test func aTypedObjectOverTheBudgetIsKeptAsUnmappedValues() throws {
        let members = (0..<(Self.budget / 10)).map { #""m\#($0)": true"# }.joined(separator: ",")
        let json = #"{"chats": {"u1": {"-C1": {"title": "big", "members": {\#(members)}}}}}"#
        let store = try makeStore()
        try importJSON(json, into: store, options: Self.options, chunkSize: 4096)
        let title = try store.connection.query("SELECT title FROM chats").first?.decode(String.self, at: 0)
        #expect(title == "big")
        try expectSameTree(exportJSON(store), json)
    }

    @Test func aStormOfOneRepeatedKeyIsLinearAndTheLastWins() throws {
        // 20,000 repeats took 215 s when each deleted its predecessor; they now drop it from the COPY buffer.
        let repeats = 20_000
        let misc = (0..<repeats).map { #""k": {"v": \#($0)}"# }.joined(separator: ",")
        let users = (0..<repeats).map { #""u1": {"username": "n\#($0)"}"# }.joined(separator: ",")
        let json = #"{"misc": {".priority": 5, \#(misc)}, "users": {\#(users)}}"#
        let store = try makeStore()
        let report = try importJSON(json, into: store)
        #expect(report.warningCount == 2 * (repeats - 1))
        #expect(report.rowsImported == 3)
        #expect(
            try exportJSON(store)
                == #"{"misc":{".priority":5,"k":{"v":\#(repeats - 1)}},"users":{"u1":{"username":"n\#(repeats - 1)"}}}"#
        )
    }

    @Test func keysAfterALongSortedRunAreCheckedAgainstTheStore() throws {
        // Past KeyTracker.exactLimit sorted keys the tracker forgets them; a key that breaks the order is then
        // looked up in the store.
        let count = KeyTracker.exactLimit + 100
        var children = (0..<count).map { #""\#($0)": \#($0)"# }
        children += [#""7": "again""#, #""a": 1"#, #""b": 2"#, #""a": 3"#, #""-1": "new""#]
        let json = #"{"logs": {\#(children.joined(separator: ","))}}"#
        let store = try makeStore()
        let report = try importJSON(json, into: store)
        #expect(report.warnings.map(\.path) == ["/logs/7", "/logs/a"])
        let tree = try #require(try TreeValue.parse(json: exportJSON(store)))
        #expect(tree["logs"]?["7"] == .string("again"))
        #expect(tree["logs"]?["a"] == .number(3))
        #expect(tree["logs"]?["-1"] == .string("new"))
        #expect(tree["logs"]?.children?.count == count + 3)
    }

    @Test func keyTrackerForgetsSortedKeysOnly() {
        var sorted = KeyTracker()
        for index in 0..<(KeyTracker.exactLimit + 10) { #expect(sorted.insert(String(index)) == .new) }
        #expect(sorted.insert(String(KeyTracker.exactLimit + 9)) == .duplicate)
        #expect(sorted.insert("zzz") == .new)
        #expect(sorted.insert("5") == .maybe)
        #expect(sorted.insert("5") == .duplicate)
        #expect(sorted.insert("zzzz") == .new)
        #expect(sorted.insert("zzzz") == .duplicate)

        // Byte order (as `sort_keys` writes numbers) counts as sorted too.
        var bytewise = KeyTracker()
        let keys = (0..<(KeyTracker.exactLimit + 10)).map(String.init).sorted {
            $0.utf8.lexicographicallyPrecedes($1.utf8)
        }
        for key in keys { #expect(bytewise.insert(key) == .new) }
        #expect(bytewise.insert("10") == .maybe)

        // An unsorted object keeps every key exact, however many.
        var unsorted = KeyTracker()
        #expect(unsorted.insert("b") == .new)
        for index in 0..<(KeyTracker.exactLimit + 10) { #expect(unsorted.insert("k\(index)") == .new) }
        #expect(unsorted.insert("b") == .duplicate)
        #expect(unsorted.insert("\u{E9}") == .new)
        #expect(unsorted.insert("e\u{301}") == .new)
    }

    @Test(arguments: [1, 2, 3, 4, 5, 6])
    func keyTrackerAgreesWithASetOfEverySequence(seed: UInt64) {
        // A sorted run (past the kept limit for some seeds), in RTDB or byte order, then keys from a pool that
        // repeats the run's and its own: each answer is checked against every key seen so far.
        var random = SeededGenerator(state: seed)
        let runLength = seed.isMultiple(of: 2) ? KeyTracker.exactLimit + 50 : Int(seed) * 700
        var run = (0..<runLength).map { index -> String in
            switch seed % 3 {
            case 0: "-K\(String(100_000_000 + index))"
            case 1: String(index)
            default: "k\(String(index, radix: 16))\u{E000}"
            }
        }
        if seed == 3 { run.sort { $0.utf8.lexicographicallyPrecedes($1.utf8) } }
        let pool = run.suffix(40) + run.prefix(40) + ["7", "-1", "a", "a\u{E000}", "\u{10000}", "zz", "00", "-0"]
        var tracker = KeyTracker()
        var seen: Set<[UInt8]> = []
        var dropped = false
        for key in run + (0..<3000).map({ _ in pool.randomElement(using: &random) ?? "" }) {
            let bytes = Array(key.utf8)
            let answer = tracker.insert(key)
            switch answer {
            case .new: #expect(!seen.contains(bytes), "\(key) reported new")
            case .duplicate: #expect(seen.contains(bytes), "\(key) reported a duplicate")
            case .maybe: #expect(dropped, "\(key) reported maybe with every key kept")
            }
            seen.insert(bytes)
            dropped = dropped || seen.count > KeyTracker.exactLimit
        }
    }

    @Test func fingerprintsAnswerExactlyAcrossRunsAndMerges() {
        var generator = SystemRandomNumberGenerator()
        let values = (0..<(Fingerprints.recentLimit * 5 + 123)).map { _ in
            UInt64.random(in: .min ... .max, using: &generator)
        }
        var set = Fingerprints()
        let firstTime = values.map { set.insert($0) }
        #expect(!firstTime.contains(false))
        #expect(set.count == values.count)
        // Every earlier value is found again, in the newest Set, a single run and the merged ones.
        let again = values.enumerated().filter { $0.offset % 97 == 0 || $0.offset == values.count - 1 }.map {
            set.insert($0.element)
        }
        #expect(!again.contains(true))
        let other = values[0] &+ 1
        let isNew = set.insert(other)
        #expect(isNew == !values.contains(other))
        #expect(set.count >= values.count)
    }
}

/// What the importer keeps from record to record.
@Suite("Importer memory")
struct ImporterMemoryTests {
    /// Each `/posts/{uid}` of owners' posts is held as a possible feed post, then emitted post by post: its typed
    /// slots went back to the spares twice, so the spares grew by one per owner (30 MB at 1.1 GB, past the
    /// import's 128 MB bound). Only the loader's rows are counted: no database is needed.
    @Test(arguments: [false, true])
    func typedSlotsDoNotPileUpFromRecordToRecord(knownShapes: Bool) throws {
        let owners = (0..<500).map { #""u\#($0)": {"-p\#($0)": {"imagesURL": "x", "imageHeight": 1}}"# }
        let json = #"{"users": {"u0": {"username": "a"}}, "posts": {\#(owners.joined(separator: ","))}}"#
        var options = ImportOptions()
        if knownShapes { options.knownPostShapes = [TreeKey("u1"): false] }
        let loader = TableLoader(connection: nil, usesFreeze: false)
        let importer = TreeImporter(
            source: MemorySource(json, chunkSize: 97), loader: loader, options: options, onFinding: { _ in [:] },
            onReject: { _ in })
        try importer.load()
        #expect(loader.counts[TreeTable.posts.rawValue].rows == 500)
        #expect(importer.spareSlotCount <= 3)
    }
}
