import Foundation
import PostgresTestSupport
import Testing

@testable import Storage

/// Adds to `store` what an earlier version left after `set /q/flags/dark/k "v"`, `set /u/7/0 true`,
/// `set /users/z/username "zed"`, `update /followers/a/b {"c": 1}` and `set /p/a/b true` (on a leaf with a
/// priority) on leaves: five hidden leaves.
func plantHiddenValues(in store: Store) throws {
    try store.connection.execute(
        script: """
            INSERT INTO unmapped_values (root, path, string_value, number_value, boolean_value, sort_key)
            SELECT root, path, s, n, b, rtdb_path_order(root, path) FROM (VALUES
                ('q', '{flags,dark}'::text[], NULL, NULL, false), ('q', '{flags,dark,k}', 'v', NULL, NULL),
                ('u', '{7}', NULL, 29920.3, NULL), ('u', '{7,0}', NULL, NULL, true),
                ('users', '{z}', 'str', NULL, NULL), ('followers', '{a,b,c}', NULL, 1, NULL),
                ('keep', '{x}', 'y', NULL, NULL), ('p', '{a,.value}', NULL, 1, NULL), ('p', '{a,.priority}', 'x', NULL, NULL),
                ('p', '{a,b}', NULL, NULL, true)) AS v(root, path, s, n, b);
            INSERT INTO users (uid, username) VALUES ('z', 'zed');
            INSERT INTO followers (uid, follower_uid) VALUES ('a', 'b'), ('a', 'c');
            """)
}

/// Stores written before migration 0016 may hold leaves that a write below them should have replaced: the
/// hidden_values check finds them and its repair removes them, leaving the tree Firebase would hold.
@Suite("Hidden values left by earlier versions")
struct HiddenValuesTests {
    private func storeWithHiddenValues() throws -> Store {
        let store = try makeStore()
        try plantHiddenValues(in: store)
        return store
    }

    @Test func theCheckListsEachHiddenLeafAndTheRepairRemovesIt() throws {
        let store = try storeWithHiddenValues()
        let expected = ["/followers/a/b", "/p/a/.value", "/q/flags/dark", "/u/7", "/users/z"]
        let found = try #require(try store.check([.hiddenValues], examples: 10).first)
        #expect(found.violations == 5)
        #expect(found.examples == expected)
        let ownQuery = try hiddenValues(store)
        #expect(ownQuery == expected, "the view agrees with the test's own query")

        let fix = try store.checkAndFix([.hiddenValues])
        #expect(fix.repairs.map(\.rowsChanged) == [5])
        #expect(fix.after.allSatisfy { $0.isClean }, "\(fix.after)")
        let left = try hiddenValues(store)
        #expect(left == [])
        expectSameText(
            try exportJSON(store),
            #"{"followers":{"a":{"b":{"c":1},"c":true}},"keep":{"x":"y"},"p":{"a":{".priority":"x","b":true}},"#
                + #""q":{"flags":{"dark":{"k":"v"}}},"#
                + #""u":{"7":[true]},"users":{"z":{"username":"zed"}}}"#)
        #expect(try store.repair(.hiddenValues).rowsChanged == 0, "idempotent")
    }

    @Test func aCleanStoreHasNone() throws {
        let store = try makeStore()
        try importJSON(
            try generate(GeneratorOptions(users: 30, seed: 9, plantsAnomalies: true)).json, into: store)
        #expect(try store.check([.hiddenValues]).first?.violations == 0)
        #expect(try hiddenValues(store) == [])
    }
}
