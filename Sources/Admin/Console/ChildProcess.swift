import Foundation

/// A program the console hands the terminal to (psql, a shell), as psql runs `\!`: it reads and writes the
/// console's own terminal, Ctrl-C is its (the console's handler stands aside, as while paging), and the console
/// waits for it to end.
enum ChildProcess {
    /// Runs `arguments[0]` (a path, or a name looked up on PATH) with `arguments`, the console's environment with
    /// `settings` over it; its exit status (128 + N when signal N ended it).
    static func run(_ arguments: [String], settings: [String: String]) throws(ConsoleError) -> Int32 {
        guard let program = arguments.first else { return 0 }
        var environment = ProcessInfo.processInfo.environment
        environment.merge(settings) { $1 }
        let argv = arguments.map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var pid: pid_t = 0
        let result = withShellSignals { posix_spawnp(&pid, program, nil, &$0, argv, envp) }
        guard result == 0 else {
            throw ConsoleError(.commandFailed, "cannot run \(program): \(String(cString: strerror(result)))")
        }
        var status: Int32 = 0
        Interrupt.whilePaging {
            while waitpid(pid, &status, 0) < 0, errno == EINTR {}
        }
        return (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
    }

    /// Runs `body` with spawn attributes that start a program with its signals as a shell starts it (default
    /// handlers for Ctrl-C, quit, a closed pipe, SIGTERM and SIGHUP, nothing blocked), not with the console's
    /// handlers or mask: the pager and the programs `psql` and `\!` run handle their keys and signals their own way.
    static func withShellSignals<Result>(_ body: (inout posix_spawnattr_t) throws -> Result) rethrows -> Result {
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var defaults = sigset_t()
        var empty = sigset_t()
        sigemptyset(&empty)
        sigemptyset(&defaults)
        for signal in [SIGINT, SIGQUIT, SIGPIPE, SIGTERM, SIGHUP] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setsigmask(&attributes, &empty)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))
        return try body(&attributes)
    }

    /// libpq's environment variable for each connection setting a child may be given.
    static let libpqVariables: [String: String] = [
        "host": "PGHOST", "hostaddr": "PGHOSTADDR", "port": "PGPORT", "dbname": "PGDATABASE", "user": "PGUSER",
        "password": "PGPASSWORD", "passfile": "PGPASSFILE", "service": "PGSERVICE", "options": "PGOPTIONS",
        "application_name": "PGAPPNAME", "sslmode": "PGSSLMODE", "sslcert": "PGSSLCERT", "sslkey": "PGSSLKEY",
        "sslrootcert": "PGSSLROOTCERT", "sslcrl": "PGSSLCRL", "requirepeer": "PGREQUIREPEER",
        "gssencmode": "PGGSSENCMODE", "channel_binding": "PGCHANNELBINDING", "connect_timeout": "PGCONNECT_TIMEOUT",
        "target_session_attrs": "PGTARGETSESSIONATTRS", "krbsrvname": "PGKRBSRVNAME",
        "sslcompression": "PGSSLCOMPRESSION", "load_balance_hosts": "PGLOADBALANCEHOSTS",
    ]
}
