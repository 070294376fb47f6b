import PostgresTestSupport
import Testing

@testable import Storage

/// A whole-tree import leaves the planner statistics of what it filled, so that the first read after it does
/// not plan blind; a merge leaves them to autovacuum.
@Suite("Statistics after an import")
struct ImportStatisticsTests {
    /// Tables with statistics gathered (`pg_stats` rows), by name.
    static func analyzedTables(_ store: Store) throws -> Set<String> {
        Set(
            try store.connection.query("SELECT DISTINCT tablename::text FROM pg_stats WHERE schemaname = 'public'")
                .map { try $0.decode(String.self, at: 0) })
    }

    @Test func aWholeTreeImportAnalyzesEveryTableItFilled() throws {
        let store = try makeStore()
        let report = try importJSON(consistentTree.json, into: store)
        let statistics = try #require(report.finishing.first { $0.target == ImportReport.Finishing.statistics })
        #expect(statistics.count == Store.treeTables.count + Store.lookupTables.count)
        let analyzed = try Self.analyzedTables(store)
        for table in ["users", "posts", "post_likes", "following", "followers", "timeline", "chats", "messages"] {
            #expect(analyzed.contains(table), "\(table) has no statistics: \(analyzed)")
        }
    }

    @Test func aMergeAndADryRunLeaveStatisticsAlone() throws {
        let store = try makeStore()
        let merge = try importJSON(
            #"{"users": {"u1": {"username": "ana"}}}"#, into: store, options: .init(mode: .merge))
        #expect(!merge.finishing.contains { $0.target == ImportReport.Finishing.statistics })
        let dryRun = try importJSON(consistentTree.json, into: store, options: .init(isDryRun: true))
        #expect(!dryRun.finishing.contains { $0.target == ImportReport.Finishing.statistics })
    }
}
