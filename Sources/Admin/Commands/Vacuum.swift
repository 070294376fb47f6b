import ArgumentParser
import Storage

/// `vacuum`: gives back the space of deleted and rolled-back rows.
struct Vacuum: ConsoleCommand {
    static let configuration = CommandConfiguration(
        commandName: "vacuum",
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
        let changes = tables.map { $0.bytesBefore - $0.bytesAfter }
        let freed = changes.filter { $0 > 0 }.reduce(0, +)
        let growths = changes.filter { $0 < 0 }
        let grown = -growths.reduce(0, +)
        var summary = freed > 0 ? "Gave back \(DomainViews.count(freed, "byte")) on disk" : "Nothing to give back"
        if grown > 0 {
            // A table VACUUM has not seen yet gets its free space map and visibility map; writes meanwhile add rows.
            summary +=
                "; \(DomainViews.count(growths.count, "table")) grew by "
                + "\(DomainViews.count(grown, "byte")) (the free space and visibility maps VACUUM writes, or rows "
                + "written meanwhile)"
        }
        session.inform(summary + ".")
    }
}
