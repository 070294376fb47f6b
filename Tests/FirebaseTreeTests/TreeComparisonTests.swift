import FirebaseTree
import Testing

/// Compares two JSON documents and returns the differences as `path kind source store` lines.
private func differences(_ source: String, _ store: String, ignoringPriorities: Bool = false) throws -> [String] {
    var found: [String] = []
    var comparison = TreeComparison(ignoringPriorities: ignoringPriorities) { difference in
        found.append(
            "/\(difference.path.joined(separator: "/")) \(difference.kind.rawValue) \(difference.source ?? "-") "
                + (difference.store ?? "-"))
    }
    var sourceReader = JSONReader(source: MemorySource(source))
    var storeReader = JSONReader(source: MemorySource(store, chunkSize: 3))
    try comparison.compare(source: &sourceReader, store: &storeReader)
    return found
}

@Suite("Comparing trees (no server)")
struct TreeComparisonTests {
    @Test func equalUnderFirebaseSemantics() throws {
        // Arrays are integer-keyed objects, nulls and empty objects do not exist, 1 is 1.0, spacing is nothing.
        #expect(
            try differences(
                #"{"a": [1, null, "x"], "b": {}, "c": null, "n": 1.0, "z": {"y": null}}"#,
                #"{"a":{"0":1,"2":"x"},"n":1}"#
            ).isEmpty)
        #expect(try differences("null", "{}").isEmpty)
        // A leaf with a priority, written either way round.
        #expect(
            try differences(#"{"p": {".value": 3, ".priority": "k"}}"#, #"{"p":{".priority":"k",".value":3}}"#).isEmpty)
    }

    @Test func eachKindAtTheShallowestPath() throws {
        let source = #"{"a": {"x": 1, "y": {"deep": true}}, "b": "text", "c": {"k": 1}, "e": 5}"#
        let store = #"{"a": {"x": 2}, "b": {"o": 1}, "d": {"new": {"n": 1}}, "e": 5}"#
        #expect(
            try differences(source, store) == [
                "/a/x changed 1 2",
                #"/a/y missing {"deep":true} -"#,
                #"/b changed "text" {"o":1}"#,
                #"/c missing {"k":1} -"#,
                #"/d extra - {"new":{"n":1}}"#,
            ])
    }

    @Test func integerKeysOrderNumerically() throws {
        #expect(
            try differences(#"{"2": "b", "10": "c", "a": 1}"#, #"{"2": "b", "10": "x", "a": 1}"#) == [
                #"/10 changed "c" "x""#
            ])
    }

    @Test func prioritiesCountUnlessIgnored() throws {
        let source = #"{"l": {".value": "v", ".priority": 2}, "n": {".priority": 1, "x": 1}}"#
        let store = #"{"l": {".priority": 3, ".value": "v"}, "n": {"x": 1}}"#
        #expect(try differences(source, store) == ["/l/.priority changed 2 3", "/n/.priority missing 1 -"])
        #expect(try differences(source, store, ignoringPriorities: true).isEmpty)
    }

    @Test func whatImportRefusesIsRejectedNotMissing() throws {
        var rejected: [TreeDifference] = []
        var comparison = TreeComparison { rejected.append($0) }
        var source = JSONReader(source: MemorySource(#"{"bad#key": 2, "ok": 1}"#))
        var store = JSONReader(source: MemorySource(#"{"ok": 1}"#))
        try comparison.compare(source: &source, store: &store)
        #expect(rejected.map(\.kind) == [.rejected])
        #expect(rejected.first?.path == ["bad#key"])
        #expect(rejected.first?.reason != nil)
    }

    @Test func keysOutOfOrderAreRefusedWithWhere() throws {
        let error = #expect(throws: TreeError.self) { try differences(#"{"b": 1, "a": 1}"#, #"{"a": 1, "b": 1}"#) }
        #expect(error?.kind == .unordered)
        #expect(error?.message.contains("\"a\" comes after \"b\"") == true)
    }

    @Test func longValuesAreCut() throws {
        var found: [TreeDifference] = []
        var comparison = TreeComparison(valueLimit: 16) { found.append($0) }
        var source = JSONReader(
            source: MemorySource(#"{"big": {"a": "0123456789", "b": {"c": [1, {"d": 2}]}, "e": 1}, "z": 1}"#))
        var store = JSONReader(source: MemorySource(#"{"z": 1}"#))
        try comparison.compare(source: &source, store: &store)
        #expect(found.count == 1 && found[0].isCut && found[0].source?.hasSuffix("…") == true)
        #expect(found.first?.path == ["big"])
    }
}
