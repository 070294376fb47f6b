import ArgumentParser
import Storage

/// `vacuum`: gives back the space of deleted and rolled-back rows.
struct Vacuum: ConsoleCommand {
    static let configuration = CommandConfiguration(
        abstract: "VACUUM the tree's tables: give back the space of deleted and rolled-back rows.",
        discussion: """
            Rows a failed or rolled-back import wrote, and rows replaced or deleted since, keep their disk space \
            until VACUUM gives it back (to PostgreSQL for new rows, and to the system where a table's end is \
            free). After a disk-full failure: free a little space, run this, then CHECKPOINT as a superuser so \
            that the write-ahead log is recycled. Also refreshes the planner's statistics (ANALYZE). Prints each \
            table's size before and after.

            --full rewrites each table compactly and gives all free space back to the system, but needs room \
            for the copy and locks the table (reads too) while it runs.

            Examples:
              vacuum
              vacuum --full
            """)

    @Flag(help: "VACUUM FULL: rewrite each table (needs room for a copy; locks it meanwhile).")
    var full = false

    @Option(help: "Output format: table, expanded, json or csv (default: the session's).")
    var format: OutputFormat?

    func run(in session: Session) throws {
        let tables = try session.store().vacuum(full: full)
        session.show(
            ResultTable(
                columns: ["table", "bytes before", "bytes after"],
                rows: tables.map { [.text($0.table), .integer($0.bytesBefore), .integer($0.bytesAfter)] }
            ), as: format ?? session.format)
        let freed = tables.reduce(0) { $0 + $1.bytesBefore - $1.bytesAfter }
        session.inform("Gave back \(DomainViews.count(max(0, freed), "byte")) on disk.")
    }
}
