import Foundation

/// Runs a helper program (initdb, pg_ctl) to completion and captures what it printed.
///
/// Uses posix_spawn and waitpid rather than Foundation's `Process`, whose exit detection waits on a descriptor
/// that the server pg_ctl daemonizes would inherit, hanging the console until the server stops.
package struct ProcessRunner {
    /// The OS user to run as, through runuser, when the console runs as root (PostgreSQL refuses root).
    package var user: String?

    /// A runner as `user` (nil: as this process's user).
    package init(user: String? = nil) {
        self.user = user
    }

    /// How a program ended and what it printed.
    package struct Outcome {
        /// Its exit status.
        package var status: Int32
        /// Its stdout and stderr.
        package var output: String
        /// Whether it exited 0.
        package var succeeded: Bool { status == 0 }
    }

    /// Runs `executable` with `arguments` (absolute paths only), output captured through a file.
    package func run(_ executable: String, _ arguments: [String]) throws -> Outcome {
        var argv = [executable] + arguments
        if let user {
            // The server user may not be able to enter the caller's working directory: start it in /.
            argv = [try Self.runuserPath(), "-u", user, "--", "/usr/bin/env", "--chdir=/"] + argv
        }
        var template = Array((FileManager.default.temporaryDirectory.path + "/admin-XXXXXX").utf8CString)
        // Close-on-exec, so only its duplicates on 1 and 2 reach the child (and no daemonized server keeps it).
        let outputDescriptor = mkstemp(&template)
        guard outputDescriptor >= 0, fcntl(outputDescriptor, F_SETFD, FD_CLOEXEC) == 0 else {
            throw StorageError(.cluster, "cannot create a temporary file: \(String(cString: strerror(errno)))")
        }
        // Unlinked at once and read back through its descriptor: a console killed meanwhile leaves no file behind.
        unlink(template)
        defer { close(outputDescriptor) }
        let pid = try spawn(argv, output: outputDescriptor)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else {
                throw StorageError(.cluster, "waiting for \(executable) failed: \(String(cString: strerror(errno)))")
            }
        }
        let text = String(decoding: Self.contents(of: outputDescriptor), as: UTF8.self)
        let exitStatus: Int32 = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        return Outcome(status: exitStatus, output: text.trimmingTrailingNewlines())
    }

    /// What the file open on `descriptor` holds, read from its start (what the child printed).
    private static func contents(of descriptor: Int32) -> [UInt8] {
        guard lseek(descriptor, 0, SEEK_SET) == 0 else { return [] }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16_384)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count > 0 {
                bytes += chunk.prefix(count)
            } else if count == 0 || errno != EINTR {
                return bytes
            }
        }
    }

    /// Marks every open descriptor above stderr close-on-exec, so nothing of this process (or inherited from its
    /// parent, such as the socket Foundation's `Process` watches to learn that a child exited) leaks into helpers
    /// and from them into the daemonized server, which would keep it open for the server's lifetime.
    private static func closeDescriptorsOnExec() {
        let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        for descriptor in descriptors.compactMap(Int32.init) where descriptor > 2 {
            let flags = fcntl(descriptor, F_GETFD)
            if flags >= 0 { _ = fcntl(descriptor, F_SETFD, flags | FD_CLOEXEC) }
        }
    }

    private func spawn(_ argv: [String], output: Int32) throws -> pid_t {
        Self.closeDescriptorsOnExec()
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, output, 1)
        posix_spawn_file_actions_adddup2(&actions, output, 2)
        // Marking descriptors close-on-exec races with other threads opening new ones (a pipe to another child);
        // closing everything above stderr in the child does not.
        if let closeFrom = Self.addCloseFrom { _ = closeFrom(&actions, 3) }
        // The child starts with default signal handling and nothing blocked, whatever this process changed.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var defaults = sigset_t(), empty = sigset_t()
        sigemptyset(&empty)
        sigemptyset(&defaults)
        for signal in [SIGINT, SIGHUP, SIGPIPE, SIGTERM, SIGQUIT] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setsigmask(&attributes, &empty)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))

        let environment = Self.childEnvironment().map { "\($0.key)=\($0.value)" }
        let cArguments = argv.map { strdup($0) } + [nil]
        let cEnvironment = environment.map { strdup($0) } + [nil]
        defer { (cArguments + cEnvironment).forEach { free($0) } }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, argv[0], &actions, &attributes, cArguments, cEnvironment)
        guard result == 0 else {
            throw StorageError(.cluster, "cannot run \(argv[0]): \(String(cString: strerror(result)))")
        }
        return pid
    }

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 and later), which Swift's Glibc module does not
    /// declare.
    private static let addCloseFrom:
        (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32)? = {
            guard let symbol = dlsym(dlopen(nil, RTLD_NOW), "posix_spawn_file_actions_addclosefrom_np") else {
                return nil
            }
            return unsafeBitCast(
                symbol, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32).self)
        }()

    /// The caller's environment without libpq's and the server's variables, which would redirect the
    /// embedded server (PGDATA, PGPORT …).
    static func childEnvironment() -> [String: String] {
        ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("PG") }
    }

    static func runuserPath() throws -> String {
        for path in ["/usr/sbin/runuser", "/sbin/runuser", "/usr/bin/runuser"]
        where FileManager.default.isExecutableFile(atPath: path) {
            return path
        }
        throw StorageError(
            .cluster, "runuser was not found, and PostgreSQL cannot run as root without it",
            hint: "Install util-linux, or run admin as an ordinary user.")
    }
}
