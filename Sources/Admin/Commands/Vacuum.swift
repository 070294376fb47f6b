import ArgumentParser
import Storage

/// `vacuum`: gives back the space of deleted and rolled-back rows.
struct Vacuum: ConsoleCommand {
    static let configuration = CommandConfiguration(
        commandName: "vacuum",
        abstract: "VACUUM the tree's tables: give back the space of deleted and rolled-back rows.",
        discussion: """
            First it drops the schemas a parallel import that never finished (killed, or its server stopped) left \
            behind, as the next whole-tree import would; not while the maintenance lock is held, since a running \
            import loads into such schemas (status lists them).

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

    @Option(help: "Output format (default: the session's).")
    var format: OutputFormat?

    func run(in session: Session) throws {
        let store = try session.store()
        let leftovers = try store.dropImportLeftovers()
        if !leftovers.dropped.isEmpty {
            session.inform(
                "Dropped \(Self.describe(leftovers.dropped)) that a parallel import which never finished left "
                    + "behind.")
        }
        if !leftovers.kept.isEmpty {
            let holder = leftovers.lockHolder.map { $0.isImport ? "an import (pid \($0.pid))" : "pid \($0.pid)" }
            session.warn(
                "kept \(Self.describe(leftovers.kept)) of parallel imports: \(holder ?? "another session") "
                    + "holds the maintenance lock, and a running import loads into such schemas. Run vacuum again "
                    + "once it has finished.")
        }
        let tables = try store.vacuum(full: full)
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

    /// "2 schemas (admin_import_3f_1, admin_import_3f_2; 12.4 MB)".
    static func describe(_ leftovers: [ImportLeftover]) -> String {
        let bytes = leftovers.reduce(0) { $0 + $1.bytes }
        return "\(DomainViews.count(leftovers.count, "schema")) (\(leftovers.map(\.name).joined(separator: ", ")); "
            + "\(DomainViews.megabytes(bytes)))"
    }
}
