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
        // COPY and FETCH are utility statements, which take no parameters; everything else composes `Query`
        // fragments, whose values are always parameters.
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
        (
            "Storage/Import/TableLoader.swift",
            "try connection?.beginCopyIn(Query(unsafeSQL: \"COPY \\(table.name) (\\(columns)) FROM STDIN\\(freeze)\"))",
            "the schema's own table and column names"
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
