import Foundation
import Storage

/// The state one console run shares across its commands: settings, output streams and the connection,
/// opened on first use. Commands receive it; nothing here is global.
final class Session {
    /// The database this console uses.
    let target: DatabaseTarget
    /// Whether the embedded cluster is migrated on first use (`--no-migrate` turns it off).
    let migratesOnConnect: Bool
    /// The format commands print in unless they are given `--format`.
    var format: OutputFormat
    /// Whether informational messages are suppressed.
    var isQuiet: Bool
    /// Whether each command's duration is printed (`timing on`).
    var isTiming = false
    /// psql's `\x auto`: tables that would not fit the terminal print as records.
    var expandedMode = ExpandedMode.off
    /// Whether long tables go through the pager on a terminal.
    var usesPager = true
    /// Whether an operator is at the terminal (the interactive console, or one command from argv): the pager and
    /// questions are for them, never for scripts.
    var isInteractive = false
    /// Data goes here (stdout, or the file `\o` named).
    private(set) var output: TextOutput
    /// Diagnostics go here.
    let diagnostics: TextOutput
    /// Set by `quit`; the main loop stops after the current command.
    var wantsToQuit = false
    /// Whether destructive commands ask first: an operator at a terminal, not a script.
    var asksForConfirmation = false
    /// How long a command waits for a lock (an import holding the tables) before it fails; nil waits forever.
    var lockTimeout: Duration? = .seconds(5) {
        didSet { try? connectedStore?.setLockTimeout(lockTimeout) }
    }

    private var cluster: EmbeddedCluster?
    /// A password typed for this session (never written anywhere).
    private var password: String?
    /// `-W`: ask for the password before connecting, as psql's -W does.
    var promptsForPassword = false
    private var openStore: Store?

    init(
        target: DatabaseTarget, migratesOnConnect: Bool, format: OutputFormat, isQuiet: Bool,
        output: TextOutput = TextOutput(descriptor: STDOUT_FILENO, isData: true),
        diagnostics: TextOutput = TextOutput(descriptor: STDERR_FILENO)
    ) {
        self.target = target
        self.migratesOnConnect = migratesOnConnect
        self.format = format
        self.isQuiet = isQuiet
        self.output = output
        self.diagnostics = diagnostics
        // A message comes after the data printed before it, also where both streams go to one pipe (cron's mail,
        // `2>&1`), as psql flushes stdout before it writes to stderr.
        diagnostics.beforeWriting = { [unowned self] in self.output.flush() }
    }

    /// The store if it is connected, without connecting (Tab completion must not start a server).
    var connectedStore: Store? {
        openStore?.isConnected == true ? openStore : nil
    }

    /// Whether the open store's schema is known to be current (checked once per connection).
    private var hasCurrentSchema = false

    /// The store, connecting on first use; reconnects when the server went away. The embedded cluster is migrated
    /// on first use (unless `--no-migrate`, or not `migratingEmbedded`: `migrate` does it itself); a database named
    /// by --db or the environment is never changed behind the operator's back. With `requiringSchema` (the
    /// default) the schema must then be current, or the command fails saying to run `admin migrate`; `status` and
    /// `migrate` take the store as it is. A database whose applied migrations were edited is refused either way.
    func store(requiringSchema: Bool = true, migratingEmbedded: Bool = true) throws -> Store {
        if let openStore, !openStore.isConnected {
            inform("The connection to the server was lost; reconnecting.")
            self.openStore = nil
            hasCurrentSchema = false
        }
        let store: Store
        if let openStore {
            store = openStore
        } else {
            store = try connect()
            try store.setLockTimeout(lockTimeout)
            store.onReadWait = { [unowned self] holder in self.sayReadWaits(for: holder) }
            Interrupt.cancels(store.makeCanceller())
            openStore = store
        }
        guard !hasCurrentSchema else { return store }
        var state = try store.migrationState()
        if !state.pending.isEmpty, migratesOnConnect, migratingEmbedded, embeddedDirectory != nil {
            // One line, not one per migration: a new cluster gets every migration at once.
            let applied = try store.migrate()
            if let last = applied.last {
                inform(
                    "Brought the embedded cluster's schema up to date: applied "
                        + (applied.count == 1 ? "migration" : "\(applied.count) migrations, up to")
                        + " \(last.fileName).")
            }
            state = try store.migrationState()
        }
        guard requiringSchema else { return store }
        guard state.pending.isEmpty else {
            let have = state.applied.isEmpty ? "has no admin schema" : "has schema version \(state.schemaVersion)"
            throw ConsoleError(
                .commandFailed,
                """
                the database \(store.endpoint) \(have); this admin needs version \(state.latestVersion) \
                (\(state.pending.count) pending migration\(state.pending.count == 1 ? "" : "s"))
                HINT:  Run `admin migrate` with a role that may change the schema (`admin migrate --list` shows them).
                """)
        }
        hasCurrentSchema = true
        return store
    }

    /// On a terminal, that a read waits for `holder` (who holds the tables), and how long it will.
    private func sayReadWaits(for holder: LockHolder?) {
        guard diagnostics.isTerminal else { return }
        let limit = lockTimeout.map { "up to \(SettingsCommand.seconds($0)) s" } ?? "as long as it takes"
        diagnostics.line("Waiting \(limit) for " + MaintenanceWaitOption.describe(holder, tables: true) + " to finish…")
        diagnostics.flush()
    }

    /// Records that the schema was just brought up to date (by `migrate`).
    func schemaIsCurrent() {
        hasCurrentSchema = true
    }

    private func connect() throws -> Store {
        switch target {
        case .conninfo(let conninfo):
            return try connect(conninfo: conninfo)
        case .environment:
            return try connect(conninfo: "")
        case .embedded(let directory):
            let cluster = try self.cluster ?? EmbeddedCluster.open(directory: directory)
            self.cluster = cluster
            let closing = UncheckedSendable(cluster)
            Interrupt.onTermination { closing.value.close() }
            do {
                return try Store(conninfo: "", parameters: cluster.connectionParameters)
            } catch let error as StorageError where error.kind == .connectionFailed {
                // The server may have been stopped under us: open the cluster again, which restarts it.
                cluster.close()
                let restarted = try EmbeddedCluster.open(directory: directory)
                self.cluster = restarted
                let reopened = UncheckedSendable(restarted)
                Interrupt.onTermination { reopened.value.close() }
                return try Store(conninfo: "", parameters: restarted.connectionParameters)
            }
        }
    }

    /// This session's connection as libpq's environment variables (PGHOST, PGPORT, …), for a program it starts
    /// (`psql`, `\!`): the embedded cluster's socket, or the settings `--db` spells out, with a password typed for
    /// this session. Connects first, so that the embedded server is up and a password is asked for once. What
    /// libpq's environment already says is inherited, not repeated.
    func clientEnvironment() throws -> [String: String] {
        _ = try store(requiringSchema: false)
        var settings: [String: String] = [:]
        switch target {
        case .embedded:
            for (key, value) in cluster?.connectionParameters ?? [] { settings[key] = value }
        case .conninfo(let conninfo):
            settings = Store.settings(ofConninfo: conninfo) ?? [:]
        case .environment:
            break
        }
        if let password { settings["password"] = password }
        var variables: [String: String] = [:]
        for (key, value) in settings {
            if let variable = ChildProcess.libpqVariables[key] { variables[variable] = value }
        }
        return variables
    }

    /// Connects as libpq would, asking for the password on the terminal when the server wants one and none was
    /// given (psql's behaviour), or before connecting with `-W`. A password typed once is kept for reconnects.
    private func connect(conninfo: String) throws -> Store {
        if promptsForPassword, password == nil { password = Self.readPassword() }
        let parameters = password.map { [("password", $0)] } ?? []
        do {
            return try Store(conninfo: conninfo, parameters: parameters)
        } catch let error as StorageError where error.needsPassword && password == nil && canAskForPassword {
            password = Self.readPassword()
            guard let password else { throw error }
            return try Store(conninfo: conninfo, parameters: [("password", password)])
        }
    }

    /// Whether a password may be asked for: the terminal is there to answer.
    private var canAskForPassword: Bool { isatty(STDIN_FILENO) == 1 && isInteractive }

    /// The password typed at the terminal without echo, or nil when none could be read.
    private static func readPassword() -> String? {
        guard let typed = getpass("Password: ") else { return nil }
        return String(cString: typed)
    }

    /// A short name of the connection for the prompt: `embedded`, or `host/db` once connected.
    var promptName: String {
        switch target {
        case .embedded: return "embedded"
        default:
            guard let endpoint = openStore?.endpoint else { return "?" }
            let host = endpoint.isUnixSocket ? "local" : endpoint.host
            return "\(host)/\(endpoint.database)"
        }
    }

    /// The embedded cluster's directory, when that is the target.
    var embeddedDirectory: String? {
        if case .embedded(let directory) = target { return directory }
        return nil
    }

    /// An informational message to stderr, unless quiet. Messages quote keys, paths and file names from the
    /// data: their control characters show as escapes (`TerminalText.escaped`).
    func inform(_ message: String) {
        guard !isQuiet else { return }
        diagnostics.line(TerminalText.escaped(message, keepingNewlines: true))
        diagnostics.flush()
    }

    /// A warning to stderr, shown even when quiet: it tells of something that happened to the data.
    func warn(_ message: String) {
        diagnostics.line(colored("WARNING:", .yellow) + "  " + TerminalText.escaped(message, keepingNewlines: true))
        diagnostics.flush()
    }

    /// Terminal colors, used sparingly.
    enum Color: String {
        case red = "31", yellow = "33"
    }

    /// `text` in `color` when stderr is a terminal and NO_COLOR (https://no-color.org) is not set.
    func colored(_ text: String, _ color: Color) -> String {
        guard usesColor else { return text }
        return "\u{1B}[\(color.rawValue)m\(text)\u{1B}[0m"
    }

    private var usesColor: Bool {
        diagnostics.isTerminal && (ProcessInfo.processInfo.environment["NO_COLOR"] ?? "").isEmpty
    }

    /// Sends command output to the file at `path` (created, or replaced; mode 0600, since it may hold user data),
    /// or back to stdout for nil: psql's `\o`.
    func redirectOutput(to path: String?) throws(ConsoleError) {
        output.flush()
        guard let path else {
            output = TextOutput(descriptor: STDOUT_FILENO, isData: true)
            return
        }
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard descriptor >= 0 else {
            throw ConsoleError(.commandFailed, "cannot write \(path): \(String(cString: strerror(errno)))")
        }
        output = TextOutput(descriptor: descriptor, closesWhenDone: true)
    }

    /// Closes the connection (the embedded cluster stays up); the next command connects again: psql's `\c`.
    func disconnect() {
        output.flush()
        openStore = nil
        hasCurrentSchema = false
    }

    /// Closes the connection and releases the embedded cluster (stopping it if this was its last console).
    func close() {
        output.flush()
        Interrupt.cancels(nil)
        openStore = nil
        hasCurrentSchema = false
        cluster?.close()
        cluster = nil
    }
}

/// A value handed to code that runs on another thread at a moment the console controls (the termination
/// handler, which runs as the process ends).
struct UncheckedSendable<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
