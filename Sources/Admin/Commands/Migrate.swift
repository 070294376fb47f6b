import ArgumentParser
import Storage

/// `migrate`: applies pending schema migrations, or lists them.
struct Migrate: ConsoleCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract: "Apply pending schema migrations (or list them with --list).",
        discussion: """
            Migrations come from sql/ and are built into admin. Each is applied in its own transaction and recorded \
            with its checksum in schema_migrations; admin refuses a database whose applied migrations were changed. \
            Only this command changes the schema of a database named by --db or the environment; the embedded \
            cluster is migrated on first use (unless --no-migrate). --list changes nothing.

            Examples:
              migrate
              migrate --list
              admin --no-migrate migrate --list
            """)

    @Flag(help: "List applied and pending migrations instead of applying them.")
    var list = false

    @Option(help: "Output format for --list (default: the session's).")
    var format: OutputFormat?

    func run(in session: Session) throws {
        let store = try session.store(requiringSchema: false, migratingEmbedded: false)
        if list {
            let state = try store.migrationState()
            let rows: [[Cell]] =
                state.applied.map {
                    [.integer($0.version), .text($0.fileName), .text("applied"), .text($0.appliedAt)]
                } + state.pending.map { [.integer($0.version), .text($0.fileName), .text("pending"), .null] }
            let table = ResultTable(columns: ["version", "file", "state", "applied_at"], rows: rows)
            session.show(table, as: format ?? session.format)
            return
        }
        let applied = try store.migrate()
        session.schemaIsCurrent()
        let version = try store.migrationState().schemaVersion
        if applied.isEmpty {
            session.inform("The schema is up to date (version \(version)).")
        } else {
            for migration in applied { session.inform("Applied \(migration.fileName).") }
            session.inform("The schema is at version \(version).")
        }
    }
}
