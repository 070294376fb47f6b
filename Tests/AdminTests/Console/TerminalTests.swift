import Foundation
import PostgresTestSupport
import Testing

@testable import Admin
@testable import Storage

/// The console in a real terminal: tmux runs it in a pseudo-terminal, `send-keys` types, `capture-pane` reads the
/// screen.
final class Terminal {
    private let socket = "admin-test-\(getpid())-\(UUID().uuidString.prefix(6))"

    static var isAvailable: Bool { FileManager.default.isExecutableFile(atPath: "/usr/bin/tmux") }

    /// Starts `command` (a shell command line) in a new detached session of `columns` × `rows`, with
    /// `environment` added to it.
    init(_ command: String, environment: [String: String], columns: Int = 160, rows: Int = 50) throws {
        let assignments = environment.map { "\($0.key)=\(shellQuoted($0.value))" }.joined(separator: " ")
        try tmux(["new-session", "-d", "-x", String(columns), "-y", String(rows), "exec env \(assignments) \(command)"])
        panePID = Int32(
            (try? tmux(["display-message", "-p", "#{pane_pid}"]))?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
        )
    }

    /// The process running in the pane, ended with the terminal whatever it was doing.
    private var panePID: Int32?

    deinit {
        if let panePID { kill(panePID, SIGKILL) }
        _ = try? tmux(["kill-server"])
    }

    /// Types keys: text, or tmux key names such as Enter, Tab, Up, C-c, C-u.
    func send(_ keys: String...) throws {
        try tmux(["send-keys"] + keys)
    }

    /// What the screen shows.
    func screen() throws -> String {
        try tmux(["capture-pane", "-p"])
    }

    /// Waits until the screen shows `text`; returns whether it did within `timeout` seconds.
    func waitFor(_ text: String, timeout: TimeInterval = 20) throws -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if try screen().contains(text) { return true }
            Thread.sleep(forTimeInterval: 0.1)
        }
        return false
    }

    /// Whether the session has ended (its command exited).
    func hasEnded() -> Bool {
        (try? tmux(["has-session"])) == nil
    }

    /// Runs tmux through posix_spawn: Foundation's `Process` would wait for the tmux server, which inherits the
    /// descriptor it watches.
    @discardableResult
    private func tmux(_ arguments: [String]) throws -> String {
        let outcome = try ProcessRunner().run("/usr/bin/tmux", ["-L", socket] + arguments)
        guard outcome.succeeded else { throw CocoaError(.executableLoad) }
        return outcome.output
    }
}

/// Single quotes for a POSIX shell.
func shellQuoted(_ text: String) -> String {
    "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
}

/// A Firebase export of `users` users, about 36 bytes each, written in chunks.
private func writeUsersExport(_ path: String, users: Int) throws {
    _ = FileManager.default.createFile(atPath: path, contents: nil)
    let file = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
    defer { try? file.close() }
    file.write(Data(#"{"users": {"#.utf8))
    var chunk = ""
    for index in 0..<users {
        chunk += (index == 0 ? "" : ", ") + #""user\#(index)": {"username": "name \#(index)"}"#
        if chunk.utf8.count > 1 << 20 {
            file.write(Data(chunk.utf8))
            chunk = ""
        }
    }
    file.write(Data((chunk + "}}").utf8))
}

/// Waits for `text` on the terminal's screen; on failure, records what the screen shows instead.
func expectScreen(
    _ terminal: Terminal, _ text: String, within timeout: TimeInterval = 20,
    sourceLocation: SourceLocation = #_sourceLocation
) throws {
    let shown = try terminal.waitFor(text, timeout: timeout)
    let screen = try terminal.screen()
    #expect(shown, "the screen shows no \(text.debugDescription):\n\(screen)", sourceLocation: sourceLocation)
}

@Suite("The console in a real terminal", .enabled(if: Terminal.isAvailable))
struct TerminalTests {
    /// On an 80 × 24 terminal: a long table goes through the pager, fitted to 80 columns with cut cells; a
    /// username that holds terminal escapes shows them as text; wide names keep the columns aligned; \x auto
    /// prints records when columns would not fit; -W asks for the password without echoing it.
    @Test func pagerWidthEscapesAndPassword() throws {
        let database = try TestPostgres.makeDatabase()
        var users: [String] = (0..<60).map { #""user\#($0)": {"username": "name \#($0)"}"# }
        users.append(#""mallory": {"username": "\u001b]0;pwned\u0007\u001b[2J\u202eevil"}"#)
        users.append(#""wide": {"username": "김민준 ✓"}"#)
        users.append(#""zlong": {"username": "\#(String(repeating: "long ", count: 60))"}"#)
        let seed = #"{"users": {"# + users.joined(separator: ", ") + "}}"
        #expect(try AdminProcess.run(["--db", database.conninfo, "-q", "import", "-"], input: seed).status == 0)
        let directory = try makeTemporaryDirectory("admin-pager")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let paged = directory + "/paged.txt"
        let environment = ["ADMIN_HISTORY": directory + "/history", "TERM": "xterm", "ADMIN_PAGER": "cat > \(paged)"]
        let command = "\(shellQuoted(AdminProcess.executable.path)) -W --db \(shellQuoted(database.conninfo))"
        let terminal = try Terminal(command, environment: environment, columns: 80, rows: 24)
        try expectScreen(terminal, "Password:")
        try terminal.send("not-shown-secret", "Enter")
        try expectScreen(terminal, "=>")
        #expect(try !terminal.screen().contains("not-shown-secret"))

        try terminal.send("users --limit 100", "Enter")
        let deadline = Date().addingTimeInterval(10)
        while (try? String(contentsOfFile: paged, encoding: .utf8))?.contains("(63 rows)") != true && Date() < deadline
        {
            Thread.sleep(forTimeInterval: 0.1)
        }
        let table = try String(contentsOfFile: paged, encoding: .utf8)
        #expect(table.contains("(63 rows)"))
        for line in table.split(separator: "\n") {
            #expect(TerminalText.width(String(line)) <= 80, "wider than the terminal: \(line)")
        }
        #expect(table.contains("…"))
        #expect(table.contains(#"\u001b]0;pwned\u0007\u001b[2J\u202eevil"#))
        #expect(!table.contains("\u{1B}"))
        let wide = try #require(table.split(separator: "\n").first { $0.contains("김민준") })
        let header = try #require(table.split(separator: "\n").first { $0.contains("username") })
        #expect(
            TerminalText.width(String(wide).components(separatedBy: "|")[0])
                == TerminalText.width(header.components(separatedBy: "|")[0]))
        // The table went to the pager, not to the screen.
        #expect(try !terminal.screen().contains("(63 rows)"))

        // \x auto: a record per row when the columns would not fit; short output is not paged.
        try terminal.send("\\x auto", "Enter")
        try terminal.send("user show zlong", "Enter")
        try expectScreen(terminal, "-[ RECORD 1 ]")
        try terminal.send("C-d")
    }

    /// Ctrl-C that ends a `watch` (the terminal echoes `^C` after its output) leaves the next prompt on a line
    /// of its own; `help`, longer than the window, goes through the pager; `status -q` typed at the prompt
    /// is quiet for that command, as on admin's command line.
    @Test func aWatchEndsOnItsOwnLineHelpIsPagedAndQuietIsTakenAfterACommand() throws {
        let database = try TestPostgres.makeDatabase()
        let directory = try makeTemporaryDirectory("admin-watch")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let paged = directory + "/paged.txt"
        let environment = ["ADMIN_HISTORY": directory + "/history", "TERM": "xterm", "ADMIN_PAGER": "cat > \(paged)"]
        let command = "\(shellQuoted(AdminProcess.executable.path)) --db \(shellQuoted(database.conninfo))"
        let terminal = try Terminal(command, environment: environment, columns: 100, rows: 50)
        try expectScreen(terminal, "=>")
        try terminal.send("watch 1 settings", "Enter")
        try expectScreen(terminal, "Every 1 s: settings")
        try terminal.send("C-c")
        try expectScreen(terminal, "^C")
        try terminal.send("status -q", "Enter")
        try expectScreen(terminal, "schema")
        let lines = try terminal.screen().split(separator: "\n")
        #expect(!lines.contains { $0.contains("^C") && $0.contains("=>") }, "\(lines)")
        #expect(lines.contains { $0.hasPrefix("admin@") && $0.hasSuffix("=> status -q") }, "\(lines)")
        #expect(!lines.contains { $0.contains("Unexpected argument") }, "\(lines)")

        try terminal.send("help", "Enter")
        let deadline = Date().addingTimeInterval(10)
        while (try? String(contentsOfFile: paged, encoding: .utf8))?.contains("Integrity") != true, Date() < deadline {
            Thread.sleep(forTimeInterval: 0.1)
        }
        #expect(try String(contentsOfFile: paged, encoding: .utf8).contains("Integrity"))
        try terminal.send("C-d")
    }

    @Test func historyCompletionConfirmationCancelAndProgress() throws {
        let database = try TestPostgres.makeDatabase()
        let seed = #"{"users": {"alice": {"username": "alice"}, "bob": {"username": "bob"}}}"#
        #expect(try AdminProcess.run(["--db", database.conninfo, "-q", "import", "-"], input: seed).status == 0)
        let directory = try makeTemporaryDirectory("admin-tty")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let big = directory + "/big.json"
        try writeUsersExport(big, users: 1_000_000)
        let environment = ["ADMIN_HISTORY": directory + "/history", "TERM": "xterm"]
        let command = "\(shellQuoted(AdminProcess.executable.path)) --db \(shellQuoted(database.conninfo))"

        // History is kept across sessions.
        let first = try Terminal(command, environment: environment)
        try expectScreen(first, "=>")
        try first.send("user show alice", "Enter")
        try expectScreen(first, "username")
        try first.send("C-d")
        let deadline = Date().addingTimeInterval(10)
        while !first.hasEnded() && Date() < deadline { Thread.sleep(forTimeInterval: 0.1) }

        let terminal = try Terminal(command, environment: environment)
        try expectScreen(terminal, "=>")
        try terminal.send("Up")
        try expectScreen(terminal, "=> user show alice")
        try terminal.send("C-u")

        // Tab completes a command, and a uid from the store once connected.
        try terminal.send("stat", "Tab")
        try expectScreen(terminal, "=> status")
        try terminal.send("C-u", "user show al", "Tab")
        try expectScreen(terminal, "=> user show alice")
        try terminal.send("C-u", "get /us", "Tab")
        try expectScreen(terminal, "=> get /users/")
        try terminal.send("al", "Tab")
        try expectScreen(terminal, "=> get /users/alice")
        try terminal.send("C-u")
        try terminal.send("\\tim", "Tab")
        try expectScreen(terminal, "=> \\timing")
        try terminal.send("C-u")
        // A directory completes with a `/` after it, so that what follows goes inside; a file with a space.
        try FileManager.default.createDirectory(atPath: directory + "/exports-dir", withIntermediateDirectories: true)
        try terminal.send("import \(directory)/exports-d", "Tab")
        try terminal.send("x")
        try expectScreen(terminal, "=> import \(directory)/exports-dir/x")
        try terminal.send("C-u", "import \(directory)/bi", "Tab")
        try terminal.send("x")
        try expectScreen(terminal, "=> import \(big) x")
        try terminal.send("C-u")

        // A backslash command's output shows at once, not with the next command's.
        try terminal.send("\\?", "Enter")
        try expectScreen(terminal, "run the commands in FILE")

        // A destructive command asks first on a terminal; "n" changes nothing.
        try terminal.send("import \(big)", "Enter")
        try expectScreen(terminal, "[y/N]")
        try terminal.send("n", "Enter")
        try expectScreen(terminal, "Nothing changed.")

        // Ctrl-C at the question answers no: back at the prompt at once, and typing works.
        try terminal.send("import \(big)", "Enter")
        let asked = Date().addingTimeInterval(10)
        while try terminal.screen().components(separatedBy: "[y/N]").count < 3, Date() < asked {
            Thread.sleep(forTimeInterval: 0.1)
        }
        try terminal.send("C-c")
        let answered = Date().addingTimeInterval(10)
        while try terminal.screen().components(separatedBy: "Nothing changed.").count < 3, Date() < answered {
            Thread.sleep(forTimeInterval: 0.1)
        }
        let afterCtrlC = try terminal.screen()
        #expect(afterCtrlC.components(separatedBy: "Nothing changed.").count == 3, "\(afterCtrlC)")
        try terminal.send("get /users/bob", "Enter")
        try expectScreen(terminal, #"{"username":"bob"}"#)
        #expect(!terminal.hasEnded())

        // A long import shows a progress bar; Ctrl-C cancels it and the console stays, with the store unchanged.
        try terminal.send("import \(big) --yes", "Enter")
        try expectScreen(terminal, "import  [")
        try expectScreen(terminal, "rows/s  ETA")
        try terminal.send("C-c")
        try expectScreen(terminal, "canceling statement due to user request")
        try terminal.send("users --format csv", "Enter")
        try expectScreen(terminal, "bob,bob")
        #expect(try !terminal.screen().contains("user0,"))

        // Piped, the same import draws no progress bar.
        let piped = try AdminProcess.run(["--db", database.conninfo, "import", big, "--dry-run"])
        #expect(piped.status == 0, "\(piped.stderr)")
        #expect(!piped.stderr.contains("import  [") && !piped.stderr.contains("\r"))
    }

    /// A compressed file loads over several sessions, each decompressing it: its bar moves by the least of their
    /// offsets in the compressed file, only forward, and the import ends as one session's would.
    @Test func aCompressedFilesSessionsMoveOneBar() throws {
        let database = try TestPostgres.makeDatabase()
        let directory = try makeTemporaryDirectory("admin-tty-gz")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = directory + "/backup.json.gz"
        #expect(try AdminProcess.run(["-q", "generate", file, "--users", "20000", "--seed", "3"]).status == 0)
        let command = "\(shellQuoted(AdminProcess.executable.path)) --db \(shellQuoted(database.conninfo))"
        let terminal = try Terminal(command, environment: ["TERM": "xterm"])
        try expectScreen(terminal, "=>")
        try terminal.send("import \(file) --yes --jobs 2 --format json", "Enter")
        try expectScreen(terminal, "import  [")
        // Each redraw's percentage, as the screen shows it, until the report replaces the bar.
        var shown: [Int] = []
        let deadline = Date().addingTimeInterval(120)
        while Date() < deadline {
            let screen = try terminal.screen()
            if screen.contains(#""sessions""#) { break }
            if let line = screen.split(separator: "\n").last(where: { $0.contains("import  [") }),
                let percent = line.split(separator: "]").dropFirst().first?.split(separator: "%").first
                    .flatMap({ Int($0.trimmingCharacters(in: .whitespaces)) }),
                percent != shown.last
            {
                shown.append(percent)
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
        try expectScreen(terminal, #""sessions": 2"#)
        #expect(shown.contains { $0 > 0 } && shown == shown.sorted(), "\(shown)")
        let tables = try AdminProcess.run(["--db", database.conninfo, "-q", "status", "--format", "csv"])
        #expect(tables.stdout.contains("rows,users,20000"), "\(tables.stdout)")
        try terminal.send("C-d")
    }

    /// A parallel import's sessions build their indexes after committing their tables: the progress line names
    /// the build that runs, and Ctrl-C then cancels it in whichever session runs it, drops every session's tables
    /// and leaves the store and the console as they were.
    @Test func ctrlCWhileTheSessionsBuildIndexesStopsThemAll() throws {
        let database = try databaseHolding(#"{"users": {"alice": {"username": "alice"}, "bob": {"username": "bob"}}}"#)
        let observer = try database.connect()
        // An operator's index that takes a twentieth of a second a row to build: minutes for the file.
        try observer.execute(
            script: """
                CREATE FUNCTION slow_key(u text) RETURNS text IMMUTABLE LANGUAGE plpgsql AS $$
                BEGIN PERFORM pg_sleep(0.05); RETURN u; END $$;
                CREATE INDEX users_slow ON users (slow_key(uid));
                """)
        let directory = try makeTemporaryDirectory("admin-tty-builds")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = directory + "/users.json"
        try writeUsersExport(file, users: 5_000)
        let command = "\(shellQuoted(AdminProcess.executable.path)) --db \(shellQuoted(database.conninfo))"
        let terminal = try Terminal(command, environment: ["TERM": "xterm"])
        try expectScreen(terminal, "=>")
        try terminal.send("import \(file) --yes --jobs 2", "Enter")
        // Both sessions load and commit before a build starts: beside the whole suite's load (eight consoles and
        // the checks running on two cores) that once took longer than 90 s. So the test waits for the build to
        // run however long the machine takes, and says where the sessions stood if it never does. The build
        // itself takes minutes.
        func isBuilding() throws -> Bool {
            try observer.query(
                """
                SELECT count(*) FROM pg_stat_activity
                WHERE datname = current_database() AND query LIKE 'CREATE INDEX users_slow%' AND state = 'active'
                """
            )[0].decode(Int.self, at: 0) == 1
        }
        let deadline = Date().addingTimeInterval(300)
        while try !isBuilding(), Date() < deadline { Thread.sleep(forTimeInterval: 0.2) }
        let sessions = try observer.query(
            """
            SELECT string_agg(format('%s %s %s/%s: %s', pid, state, wait_event_type, wait_event, left(query, 60)),
                E'\\n')
            FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()
            """)[0].decode(String?.self, at: 0)
        #expect(
            try isBuilding(), "no session built users_slow within 300 s; the database's sessions:\n\(sessions ?? "")")
        try expectScreen(terminal, "users_slow", within: 30)
        // The step's clock ticks while the build runs: the line shows another time a few seconds on.
        func clock() throws -> String? {
            try terminal.screen().split(separator: "\n").last { $0.contains("users_slow") }
                .flatMap { $0.split(separator: " ").last.map(String.init) }
        }
        let shown = try clock()
        var later = shown
        for _ in 0..<50 where later == shown {
            Thread.sleep(forTimeInterval: 0.2)
            later = try clock()
        }
        #expect(shown != nil && later != shown, "the step's clock stood at \(shown ?? "nothing")")
        #expect(
            try observer.query(
                "SELECT count(*) FROM pg_namespace WHERE starts_with(nspname, \(SideTables.helperSchemaPrefix))"
            )[0].decode(Int.self, at: 0) > 0, "the sessions had committed their tables")
        try terminal.send("C-c")
        try expectScreen(terminal, "canceling statement due to user request")
        try terminal.send("users --format csv", "Enter")
        try expectScreen(terminal, "bob,bob")
        #expect(try !terminal.screen().contains("user0,"))
        #expect(!terminal.hasEnded())
        let left = try observer.query(
            """
            SELECT (SELECT count(*) FROM pg_namespace WHERE starts_with(nspname, \(SideTables.helperSchemaPrefix))),
                (SELECT count(*) FROM pg_stat_activity
                    WHERE datname = current_database() AND query LIKE 'CREATE INDEX users_slow%' AND state = 'active')
            """)[0]
        #expect(try left.decode(Int.self, at: 0) == 0, "a session's tables were left")
        #expect(try left.decode(Int.self, at: 1) == 0, "a build went on")
    }

    /// With the real `less` on a 160 × 50 terminal: a 100-row table is paged whole (the pager owns the terminal,
    /// so its last screen shows the end and the row count), Ctrl-C belongs to the pager and neither cancels nor
    /// ends the console, `get`'s long JSON is paged too, and short output is not.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/less")))
    func realPagerOwnsTheTerminal() throws {
        let users = (0..<120).map { #""user\#($0)": {"username": "name \#($0)"}"# }
        let database = try databaseHolding(#"{"users": {"# + users.joined(separator: ", ") + "}}")
        let command = "\(shellQuoted(AdminProcess.executable.path)) --db \(shellQuoted(database.conninfo))"
        let terminal = try Terminal(command, environment: ["TERM": "xterm", "ADMIN_PAGER": "less -FRSX"])
        try expectScreen(terminal, "=>")

        try terminal.send("users --limit 100", "Enter")
        try expectScreen(terminal, "user1 ")
        #expect(try !terminal.screen().contains("(100 rows)"), "one screen at a time")
        try terminal.send("C-c")
        try terminal.send("C-c")
        try terminal.send("C-c")
        // less can lose a key typed right after Ctrl-C: when the signal lands as its read of the terminal returns
        // with the key, its handler abandons that read. On a loaded machine that happens; press G again.
        for _ in 0..<5 {
            try terminal.send("G")
            if try terminal.waitFor("(100 rows)", timeout: 2) { break }
        }
        try expectScreen(terminal, "(100 rows)")
        #expect(!terminal.hasEnded(), "three Ctrl-C in the pager do not end the console")
        try terminal.send("q")
        try expectScreen(terminal, "=>")

        try terminal.send("get /users --pretty", "Enter")
        try expectScreen(terminal, #""user0" : {"#)
        #expect(try !terminal.screen().contains(#""user99""#))
        try terminal.send("G")
        try expectScreen(terminal, #""user99" : {"#)
        try terminal.send("q")
        try terminal.send("get /users/user7", "Enter")
        try expectScreen(terminal, #"{"username":"name 7"}"#)
        try terminal.send("C-d")
    }

    /// Data shows its control characters as escapes on a terminal in every format (a stored `ESC [31m` or
    /// U+009B is shown, not obeyed); to a pipe, CSV and JSON keep every byte.
    @Test func controlCharactersInDataAreShownNotObeyed() throws {
        let name = "a\u{1B}[31mred\u{9B}x"
        let tree = #"{"users": {"u1": {"username": "a\u001b[31mred\u009bx"}}}"#
        let database = try databaseHolding(tree)
        let piped = try AdminProcess.run(["--db", database.conninfo, "users", "--format", "csv"])
        #expect(piped.stdout.contains(name), "a pipe gets the bytes: \(piped.stdout.debugDescription)")
        let command = "\(shellQuoted(AdminProcess.executable.path)) --db \(shellQuoted(database.conninfo))"
        let terminal = try Terminal(command, environment: ["TERM": "xterm"])
        try expectScreen(terminal, "=>")
        try terminal.send("users --format csv", "Enter")
        try expectScreen(terminal, #"u1,a\u001b[31mred\u009bx"#)
        try terminal.send("users --format json", "Enter")
        try expectScreen(terminal, #""username": "a\u001b[31mred\u009bx""#)
        try terminal.send("get /users/u1", "Enter")
        try expectScreen(terminal, #"{"username":"a\u001b[31mred\u009bx"}"#)
    }
}
