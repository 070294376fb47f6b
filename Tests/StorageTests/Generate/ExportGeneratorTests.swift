import Foundation
import PostgresTestSupport
import Testing

@testable import Storage

/// Generates a tree in memory.
func generate(_ options: GeneratorOptions) throws -> (json: String, report: GeneratorReport) {
    var bytes: [UInt8] = []
    let report = try ExportGenerator.write(options) { bytes.append(contentsOf: $0) }
    return (String(decoding: bytes, as: UTF8.self), report)
}

@Suite("The export generator")
struct GeneratorTests {
    @Test func theSameSeedGivesTheSameBytesAndAnotherSeedOthers() throws {
        let first = try generate(GeneratorOptions(users: 150, seed: 5, plantsAnomalies: true))
        let again = try generate(GeneratorOptions(users: 150, seed: 5, plantsAnomalies: true))
        let other = try generate(GeneratorOptions(users: 150, seed: 6, plantsAnomalies: true))
        #expect(first.json == again.json)
        #expect(first.report.violations == again.report.violations)
        #expect(first.json != other.json)
        #expect(first.report.bytes == first.json.utf8.count)
        // The layout changes the bytes, never the tree.
        let pretty = try generate(
            GeneratorOptions(
                users: 150, seed: 5, plantsAnomalies: true,
                output: JSONTextWriter.Options(isPretty: true)))
        #expect(pretty.json != first.json)
        #expect(try TreeValue.parse(json: pretty.json) == TreeValue.parse(json: first.json))
    }

    @Test(arguments: [
        GeneratorOptions(users: 120, seed: 1),
        GeneratorOptions(users: 90, seed: 2, plantsAnomalies: true, output: JSONTextWriter.Options(isPretty: true)),
        GeneratorOptions(users: 80, seed: 3, dialect: .appcoda),
    ])
    func importThenExportGivesTheFileBackByteForByte(_ options: GeneratorOptions) throws {
        let generated = try generate(options)
        let store = try makeStore()
        let imported = try importJSON(generated.json, into: store)
        #expect(imported.rejects.isEmpty && imported.warningCount == 0)
        expectSameText(try exportJSON(store, options: options.output), generated.json)
    }

    @Test func checkFindsExactlyWhatTheGeneratorPlanted() throws {
        let generated = try generate(GeneratorOptions(users: 400, seed: 11, plantsAnomalies: true))
        // Every check has something to find, but hidden values, which no export can hold (a key holding a value
        // and children would be a key given twice, and import keeps the last), and misshapen posts (a tree says
        // how its posts are stored), and the link to Auth accounts, which a tree does not hold.
        for result in generated.report.violations {
            #expect(
                (result.violations > 0)
                    == ![.hiddenValues, .postsShape, .accountMissing, .profileMissing].contains(result.check),
                "\(result.check.rawValue)")
        }
        let store = try makeStore()
        try importJSON(generated.json, into: store)
        let found = try store.check(examples: ExportGenerator.exampleLimit)
        #expect(found == generated.report.violations)

        // Everything but the duplicate chats (an operator's decision) is repaired.
        let fixed = try store.checkAndFix()
        for result in fixed.after {
            let expected =
                result.check == .chatDuplicates
                ? generated.report.violations.first { $0.check == .chatDuplicates }!.violations : 0
            #expect(result.violations == expected, "\(result.check.rawValue): \(result.examples)")
        }
    }

    /// `--batch-size`: one transaction per range of users or chats (per table for orphans), the same result as
    /// one transaction.
    @Test(arguments: Repair.fixOrder.filter(\.isBatchable))
    func batchedRepairsChangeWhatOneTransactionChanges(repair: Repair) throws {
        var generated = try generate(GeneratorOptions(users: 300, seed: 21, plantsAnomalies: true)).json
        // A timeline of a uid below and of one above every user's, which only the open-ended ranges cover.
        generated = generated.replacingOccurrences(
            of: #""timeline":{"#,
            with: #""timeline":{"!first":{"-K0":{"poster_uid":"x"}},"~last":{"-K1":{"poster_uid":"x"}},"#)
        let whole = try makeStore(), batched = try makeStore()
        try importJSON(generated, into: whole)
        try importJSON(generated, into: batched)
        let before = try exportJSON(batched)
        let dryRun = try batched.repair(repair, options: RepairOptions(isDryRun: true, batchSize: 7))
        expectSameText(try exportJSON(batched), before)

        let expected = try whole.repair(repair)
        var batches: [Int] = [], counts = Set<Int>()
        let report = try batched.repair(repair, options: RepairOptions(batchSize: 7)) { index, count in
            batches.append(index)
            counts.insert(count)
        }
        #expect(counts.count == 1 && batches == Array(0..<(counts.first ?? 0)))
        if repair == .timelines {
            // 300 users, 7 per batch: 43 ranges.
            #expect(batches.count == 43)
        }
        #expect(batches.count > 1)
        #expect(expected.rowsChanged > 0)
        #expect(report.rowsChanged == expected.rowsChanged)
        #expect(dryRun.rowsChanged == expected.rowsChanged)
        #expect(Set(report.changes.map(\.table)) == Set(expected.changes.map(\.table)))
        expectSameText(try exportJSON(batched), try exportJSON(whole))
    }

    @Test func aCleanTreeFailsOnlyTheLegacyHashCheck() throws {
        for users in [1, 2, 3, 7, 31, 250] {
            let generated = try generate(GeneratorOptions(users: users, seed: UInt64(users)))
            let store = try makeStore()
            try importJSON(generated.json, into: store)
            let results = try store.check(examples: ExportGenerator.exampleLimit)
            #expect(results == generated.report.violations, "\(users) users")
            for result in results where result.check != .chatHashLegacy {
                #expect(result.isClean, "\(users) users: \(result.check.rawValue) \(result.examples)")
            }
            let chats = try store.connection.query("SELECT count(DISTINCT chat_key) FROM chats")[0].decode(
                Int.self, at: 0)
            #expect(results.first { $0.check == .chatHashLegacy }!.violations == chats)
        }
    }

    @Test func theTreeLooksLikeTheAppsData() throws {
        let generated = try generate(GeneratorOptions(users: 600, seed: 9))
        let tree = try #require(try TreeValue.parse(json: generated.json))
        let root = try #require(tree.children)
        #expect(
            root.keys.map(\.string).sorted() == [
                "chats", "followers", "following", "messages", "postLikes", "posts", "timeline", "users",
            ])

        // Firebase Auth-like uids, and usernames in many scripts.
        let users = try #require(root["users"]?.children)
        #expect(users.count == 600)
        #expect(
            users.keys.map(\.string).allSatisfy {
                $0.utf8.count == 28 && $0.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) }
            })
        let names = users.values.compactMap { $0.children?["username"]?.stringValue }
        #expect(Set(names).count == 600)
        #expect(names.filter { !$0.allSatisfy(\.isASCII) }.count > 100)

        // Push IDs whose time prefix is created_at's millisecond.
        var postCount = 0
        for (_, posts) in try #require(root["posts"]?.children) {
            for (key, post) in try #require(posts.children) {
                postCount += 1
                let createdAt = try #require(post.children?["created_at"]?.numberValue)
                let keyTime = try #require(PushIDGenerator.timestamp(of: key.string)).timeIntervalSince1970
                #expect(abs(keyTime - (createdAt * 1000).rounded(.down) / 1000) < 0.0005, "\(key) \(createdAt)")
                #expect(createdAt.rounded() != createdAt)
            }
        }
        #expect(postCount > 600)

        // A long tail: a few users are followed by far more than the typical user.
        let followerCounts = try #require(root["followers"]?.children).values.map { $0.children?.count ?? 0 }.sorted()
        let median = followerCounts[followerCounts.count / 2]
        #expect(followerCounts.last! > 20 * median)
        #expect(followerCounts.filter { $0 > 10 * median }.count < 15)
    }

    @Test func theCommittedSampleIsTheGeneratorsOutput() throws {
        let exports = Repository.url("exports")
        let sample = try String(contentsOf: exports.appendingPathComponent("sample-makestagram.json"), encoding: .utf8)
        let generated = try generate(
            GeneratorOptions(
                users: 90, seed: 6, plantsAnomalies: true, output: JSONTextWriter.Options(isPretty: true)))
        expectSameText(generated.json, sample)
        let manifest = try Data(contentsOf: exports.appendingPathComponent("sample-makestagram.manifest.json"))
        let checks = try #require(
            (try JSONSerialization.jsonObject(with: manifest) as? [String: Any])?["checks"] as? [[String: Any]])
        #expect(checks.map { $0["name"] as? String } == generated.report.violations.map(\.check.rawValue))
        #expect(checks.map { $0["violations"] as? Int } == generated.report.violations.map(\.violations))
        #expect(checks.map { $0["examples"] as? [String] } == generated.report.violations.map(\.examples))
    }

    @Test func objectsWithNothingInThemAreNeverWritten() throws {
        var output: [UInt8] = []
        func writer() -> TreeWriter {
            TreeWriter(json: JSONTextWriter(), sink: { output.append(contentsOf: $0) }, onProgress: nil)
        }
        var empty = writer()
        empty.enter("users")
        empty.enter("alice")
        try empty.leave()
        try empty.leave()
        try empty.finish()
        #expect(String(decoding: output, as: UTF8.self) == "null")

        output = []
        var nested = writer()
        nested.enter("chats")
        nested.enter("alice")
        try nested.leave()
        nested.enter("bob")
        nested.enter("-C1")
        nested.string("title", "hi")
        try nested.leave()
        try nested.leave()
        try nested.leave()
        nested.enter("users")
        try nested.leave()
        try nested.finish()
        #expect(String(decoding: output, as: UTF8.self) == #"{"chats":{"bob":{"-C1":{"title":"hi"}}}}"#)
    }
}

private extension TreeValue {
    var stringValue: String? {
        if case .string(let text) = self { text } else { nil }
    }

    var numberValue: Double? {
        if case .number(let number) = self { number } else { nil }
    }
}
