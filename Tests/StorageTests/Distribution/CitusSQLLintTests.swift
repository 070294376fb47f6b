import Foundation
import PostgresClient
import PostgresTestSupport
import Testing

@testable import Storage

/// SQL patterns that plain PostgreSQL accepts and Citus rejects or gets wrong (shared/distributed-postgres.md,
/// rules 14-20). CI has no Citus, so these run everywhere: over Storage's SQL text, and over the views and
/// functions of a freshly migrated database (what the migrations leave live, not what old ones once said).
@Suite("SQL that Citus can run")
struct CitusSQLLintTests {
    /// Storage's Swift sources, as text.
    static let sources: [(file: String, text: String)] = {
        let root = Repository.url("Sources/Storage")
        let files = FileManager.default.enumerator(atPath: root.path)?.compactMap { $0 as? String } ?? []
        return files.filter { $0.hasSuffix(".swift") }.sorted().compactMap { file in
            (try? String(contentsOf: root.appendingPathComponent(file), encoding: .utf8)).map { (file, $0) }
        }
    }()

    /// Views only a single server reads: checks whose distributed stores read a twin (migrations 0012, 0014).
    static let singleServerViews: Set<String> = Set(
        IntegrityCheck.allCases.filter { $0.viewName(isDistributed: true) != $0.viewName }.map(\.viewName))

    @Test func sourcesHaveNoEmptySelectList() {
        #expect(!Self.sources.isEmpty)
        for (file, text) in Self.sources {
            // Rule 14: Citus plans an uncorrelated EXISTS (SELECT FROM t) recursively and fails (Citus issue 5094).
            #expect(text.range(of: #"SELECT\s+FROM\b"#, options: .regularExpression) == nil, "\(file)")
        }
    }

    @Test func sourcesAskWhetherATableHasRowsWithALimit() {
        // Citus answers an uncorrelated EXISTS by first collecting every row its subquery selects from every
        // shard; `Query.anyRow` adds the LIMIT 1 that each shard then applies.
        for (file, text) in Self.sources {
            #expect(text.range(of: #"SELECT\s+(NOT\s+)?EXISTS\s*\("#, options: .regularExpression) == nil, "\(file)")
        }
        #expect(Query.anyRow(in: "timeline").sql.hasSuffix(" LIMIT 1)"))
    }

    @Test func sourcesCountConflictingInsertsByTheirRows() throws {
        // Rule 18: through a coordinator, INSERT ... SELECT ... ON CONFLICT is tagged with the rows it read.
        let execute = try Regex(#"execute\(\s*"""(?<sql>(?:(?!""").)*)""""#).dotMatchesNewlines()
        var statements = 0
        for (file, text) in Self.sources {
            for match in text.matches(of: execute) {
                statements += 1
                let sql = String(match.output["sql"]?.substring ?? "")
                let insertsSelected =
                    sql.contains("INSERT") && sql.contains("SELECT") && sql.contains("ON CONFLICT")
                #expect(!insertsSelected, "\(file): \(sql.prefix(80))")
            }
        }
        #expect(statements > 5, "the pattern still finds execute() statements")
    }

    @Test func noStatementUpdatesADistributionColumn() {
        // Rule 20: rows move between distribution values by DELETE and INSERT, as chat merge moves messages.
        let ledger: Set<String> = []
        var found: Set<String> = []
        for (file, text) in Self.sources {
            for case let planned in Store.distributionPlan {
                guard case .distributed(let column, _) = planned.placement else { continue }
                // The SET list only: up to the UPDATE's FROM, WHERE or RETURNING.
                let pattern =
                    #"UPDATE\s+"# + planned.name + #"\b(?:\s+(?:AS\s+)?\w+)?\s+SET\s"#
                    + #"(?:(?!\b(?:FROM|WHERE|RETURNING)\b)[^;"])*?\b"# + column + #"\s*="#
                if text.range(of: pattern, options: .regularExpression) != nil {
                    found.insert("\(file): \(planned.name).\(column)")
                }
            }
        }
        #expect(found == ledger)
    }

    @Test func functionsNotifyOutsideStatementsThatReadTables() throws {
        // Rule 17: a statement that reads a distributed table runs on a worker, and so would its pg_notify.
        let store = try makeStore()
        let tables = Store.distributionPlan.map(\.name) + ["tree_post_likes", "tree_following", "tree_followers"]
        var notifying = 0
        for row in try store.connection.query(
            """
            SELECT p.proname, p.prosrc FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
            WHERE n.nspname = current_schema() AND p.prosrc ~ 'notify'
            """)
        {
            let name = try row.decode(String.self, at: 0)
            let source = try row.decode(String.self, at: 1)
            notifying += 1
            // A PL/pgSQL FOR loop's query ends at LOOP; the loop's body is its own statement.
            let statements = source.replacingOccurrences(
                of: #"\bLOOP\b"#, with: ";", options: [.regularExpression, .caseInsensitive]
            ).split(separator: ";")
            for statement in statements where statement.contains("notify") {
                for table in tables {
                    let reads = statement.range(
                        of: #"\b(FROM|JOIN)\s+"# + table + #"\b"#, options: [.regularExpression, .caseInsensitive])
                    #expect(reads == nil, "\(name) notifies in a statement that reads \(table)")
                }
            }
        }
        #expect(notifying >= 3, "notify_event, notify_message and notify_chat are found")
    }

    @Test func liveViewsHaveNoEmptySelectListsBeyondTheLedger() throws {
        let store = try makeStore()
        var found: Set<String> = []
        for row in try store.connection.query(
            """
            SELECT c.relname::text, pg_get_viewdef(c.oid) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE n.nspname = current_schema() AND c.relkind = 'v'
            """)
        {
            let definition = try row.decode(String.self, at: 1)
            if definition.range(of: #"SELECT\s+FROM\b"#, options: .regularExpression) != nil {
                found.insert(try row.decode(String.self, at: 0))
            }
        }
        #expect(found == Self.singleServerViews)
    }

    /// Migrations from 0015 on may meet a distributed store, where they run as one multi-statement message, and
    /// Citus propagates some DDL by the statement's text (which is then the whole file) and refuses it: "cannot
    /// insert multiple commands into a prepared statement". Measured on Citus 13.2.2: CREATE INDEX, ALTER COLUMN
    /// and a named ADD CONSTRAINT fail that way; ADD COLUMN, unnamed ADD PRIMARY KEY/UNIQUE and views do not. A
    /// statement a DO block EXECUTEs (`EXECUTE $i$…$i$`, migration 0020) is propagated as its own text.
    @Test func migrationsThatMeetDistributedStoresUseDDLCitusDeparses() throws {
        let refused = try Regex(#"(?i)\bCREATE\s+(UNIQUE\s+)?INDEX\b|\bALTER\s+COLUMN\b|\bADD\s+CONSTRAINT\b"#)
        let executed = try Regex(#"EXECUTE \$i\$[^$]*\$i\$"#)
        let later = Migration.embedded.filter { $0.version >= 15 }
        #expect(!later.isEmpty)
        for migration in later {
            let code = migration.sql.split(separator: "\n").filter { !$0.hasPrefix("--") }.joined(separator: "\n")
                .replacing(executed, with: "")
            #expect(code.firstMatch(of: refused) == nil, "\(migration.fileName)")
        }
    }
}
