import Foundation
import Testing

private let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
    "../../Sources"
)
.standardized

/// The Swift files under `Sources/<module>`, with their lines.
private func swiftFiles(in module: String) throws -> [(name: String, lines: [String])] {
    let root = sources.appendingPathComponent(module)
    let enumerator = try #require(FileManager.default.enumerator(atPath: root.path))
    return try enumerator.compactMap { $0 as? String }.filter { $0.hasSuffix(".swift") }.sorted().map { relative in
        let text = try String(contentsOf: root.appendingPathComponent(relative), encoding: .utf8)
        return (module + "/" + relative, text.components(separatedBy: "\n"))
    }
}

/// Values reach SQL only as bind parameters or COPY data: `Query`'s string interpolation binds every value, and
/// only `unsafeSQL` splices text into a statement. These tests keep it that way.
@Suite("No SQL built from values")
struct SQLSpliceTests {
    /// Every place that splices text into SQL, with why that text is not a value. A new one fails this test
    /// until it is reviewed and listed here.
    static let reviewedSplices: [(file: String, line: String, why: String)] = [
        (
            "Storage/Domain/Store+Chats.swift", "SELECT \\(unsafeSQL: Self.chatColumns) FROM chats",
            "a constant column list"
        ),
        (
            "Storage/Domain/Store+Chats.swift", "SELECT \\(unsafeSQL: Self.messageColumns) FROM (",
            "a constant column list"
        ),
        (
            "Storage/Domain/Store+Chats.swift",
            "SELECT uid, username FROM users WHERE uid IN (\\(a), \\(b)) \\(unsafeSQL: lock.rawValue)",
            "an enum's row-lock clause"
        ),
        ("Storage/Domain/Store+Chats.swift", "SELECT \\(unsafeSQL: Self.chatColumns) FROM (", "a constant column list"),
        ("Storage/Domain/Store+Chats.swift", "RETURNING \\(unsafeSQL: Self.chatColumns)", "a constant column list"),
        (
            "Storage/Domain/Store+Posts.swift", "SELECT \\(unsafeSQL: Self.postColumns) FROM posts p",
            "a constant column list"
        ),
        (
            "Storage/Schema/Store+Status.swift",
            "let query = Query(unsafeSQL: \"SELECT \" + exists.joined(separator: \" OR \"))",
            "EXISTS clauses over the schema's own table names, quoted as identifiers"
        ),
        (
            "Storage/Domain/Store+Watch.swift", "SELECT \\(unsafeSQL: Self.messageColumns) FROM messages",
            "a constant column list"
        ),
        (
            "Storage/Domain/Store+Watch.swift",
            "SELECT \\(unsafeSQL: Self.chatColumns) FROM chats WHERE uid = \\(uid) AND chat_key = \\(keys[0])",
            "a constant column list; uid and key are bound"
        ),
        (
            "Storage/Domain/Store+Users.swift",
            "guard try !connection.query(\"SELECT FROM users WHERE uid = \\(uid) \\(unsafeSQL: lock.rawValue)\").isEmpty else {",
            "an enum's row-lock clause; uid is bound"
        ),
        (
            "Storage/Export/CopyBlock.swift",
            "let statement = Query(unsafeSQL: \"COPY (\\(select)) TO STDOUT\")",
            "a whole-table SELECT of quoted identifiers and constants"
        ),
        (
            "Storage/Export/PartStream.swift",
            "Query(unsafeSQL: \"FETCH FORWARD \\(fetchSize) FROM \\(Query.quoted(identifier: cursor!))\")",
            "a batch size this stream computes and a quoted cursor name of its own"
        ),
        ("Storage/Domain/Store+Timeline.swift", "SELECT \\(unsafeSQL: Self.postColumns),", "a constant column list"),
        (
            "Storage/Domain/Store+Timeline.swift",
            "SELECT \\(unsafeSQL: columns) FROM feed_posts WHERE timestamp_ms IS NOT NULL \\(unsafeSQL: order) LIMIT \\(limit)",
            "constant columns and ORDER BY; the limit is bound"
        ),
        (
            "Storage/Domain/Store+Timeline.swift",
            "SELECT \\(unsafeSQL: columns) FROM feed_posts WHERE timestamp_ms < \\(timestamp) \\(unsafeSQL: order) LIMIT \\(limit)",
            "constant columns and ORDER BY; values are bound"
        ),
        (
            "Storage/Domain/Store+Timeline.swift",
            "SELECT \\(unsafeSQL: columns) FROM feed_posts WHERE (timestamp_ms, post_id) < (\\(timestamp), \\(id)::text)",
            "constant columns; values are bound"
        ),
        (
            "Storage/Domain/Store+Timeline.swift", "\\(unsafeSQL: order) LIMIT \\(limit)",
            "a constant ORDER BY; the limit is bound"
        ),
        (
            "Storage/Domain/Store+Timeline.swift",
            "SELECT \\(unsafeSQL: columns) FROM feed_posts WHERE timestamp_ms > \\(timestamp) \\(unsafeSQL: order) LIMIT \\(limit)",
            "constant columns and ORDER BY; values are bound"
        ),
        (
            "Storage/Maintenance/Store+Repair.swift", "WHERE \\(unsafeSQL: unmappedChildren(of: \"timeline\"))",
            "a condition built from a constant node name"
        ),
        (
            "Storage/Maintenance/Store+Repair.swift",
            "WHERE \\(unsafeSQL: unmappedChildren(of: \"followers\"))", "a condition built from a constant node name"
        ),
        (
            "Storage/Maintenance/Store+Repair.swift",
            "WHERE \\(unsafeSQL: unmappedChildren(of: \"following\"))", "a condition built from a constant node name"
        ),
        (
            "Storage/Maintenance/Store+Repair.swift", "nullif(s.extra - \\(unsafeSQL: chatFields), '{}') AS extra",
            "a constant array of field names"
        ),
        (
            "Storage/Maintenance/Store+Repair.swift",
            "last_message_sent = d.last_message_sent, extra = nullif(c.extra - \\(unsafeSQL: chatFields), '{}')",
            "a constant array of field names"
        ),
        (
            "Storage/Maintenance/Store+Repair.swift", "OR c.extra ?| \\(unsafeSQL: chatFields))",
            "a constant array of field names"
        ),
        (
            "Storage/Maintenance/Store+Repair.swift", "OR c.extra ?| \\(unsafeSQL: chatFields)))",
            "a constant array of field names"
        ),
        (
            "Storage/Maintenance/Store+Repair.swift",
            "WHERE ((\\(unsafeSQL: unmappedChildren(of: \"postLikes\")) AND NOT EXISTS (",
            "a condition built from a constant node name"
        ),
        (
            "Storage/Maintenance/Store+Repair.swift",
            "OR (\\(unsafeSQL: unmappedChildren(of: \"timeline\")) AND NOT EXISTS (",
            "a condition built from a constant node name"
        ),
        (
            "Storage/Import/Store+Import.swift", "try connection.execute(Query(unsafeSQL: \"TRUNCATE \\(tables)\"))",
            "the schema's own table names, quoted as identifiers"
        ),
        (
            "Storage/Import/Store+Import.swift",
            "try connection.execute(Query(unsafeSQL: \"LOCK TABLE \\(tables) IN ACCESS EXCLUSIVE MODE\"))",
            "the schema's own table names, quoted as identifiers"
        ),
        (
            "Storage/Import/Store+Import.swift",
            "try connection.execute(Query(unsafeSQL: \"LOCK TABLE \\(tables) IN SHARE ROW EXCLUSIVE MODE\"))",
            "the schema's own table names, quoted as identifiers"
        ),
        (
            "Storage/Maintenance/Store+Vacuum.swift",
            "unsafeSQL: \"VACUUM (\\(full ? \"FULL, \" : \"\")ANALYZE) \\(Query.quoted(identifier: table))\"))",
            "a flag's keyword and the schema's own table names, quoted as identifiers"
        ),
        (
            "Storage/Import/TableLoader.swift",
            "try connection?.beginCopyIn(Query(unsafeSQL: \"COPY \\(table.name) (\\(columns)) FROM STDIN\\(freeze)\"))",
            "the schema's own table and column names"
        ),
        (
            "Storage/Export/TableRead.swift",
            "Query(unsafeSQL: \"SELECT EXISTS (SELECT 1 FROM \\(Query.quoted(identifier: name)) WHERE \\(needsOrderCondition))\")",
            "a quoted table name and a condition over its own key columns"
        ),
        (
            "Storage/Export/TableRead.swift",
            "return Query(unsafeSQL: \"SELECT EXISTS (SELECT 1 FROM \\(table) WHERE \\(condition))\")",
            "a quoted table name and conditions over its own key columns"
        ),
    ]

    @Test func everyPlaceThatSplicesTextIntoSQLIsReviewed() throws {
        var found: [(file: String, line: String)] = []
        for file in try swiftFiles(in: "Storage") {
            for line in file.lines where line.contains("unsafeSQL") {
                found.append((file.name, line.trimmingCharacters(in: .whitespaces)))
            }
        }
        let reviewed = Self.reviewedSplices.map { "\($0.file): \($0.line)" }
        let unreviewed = found.map { "\($0.file): \($0.line)" }.filter { !reviewed.contains($0) }
        #expect(
            unreviewed.isEmpty, "SQL spliced from text that nobody reviewed:\n\(unreviewed.joined(separator: "\n"))")
        let gone = reviewed.filter { entry in !found.contains { "\($0.file): \($0.line)" == entry } }
        #expect(gone.isEmpty, "listed but no longer in the sources (remove them):\n\(gone.joined(separator: "\n"))")
    }
}
