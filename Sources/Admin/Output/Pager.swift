import Foundation

/// The operator's pager (`ADMIN_PAGER`, else `PAGER`, else `less -FRSX`), run as psql runs it: `sh -c`, reading
/// from a pipe, in the console's own process group, so that it is in the terminal's foreground and can read
/// keys from it. (Foundation's `Process` starts a new session, without a controlling terminal: `less` then
/// gives up at once and the rest of the text is lost.)
final class Pager {
    private let pid: pid_t
    private var input: Int32

    /// The pager's shell command; nil when paging is off (an empty `ADMIN_PAGER` or `PAGER`).
    static func command(environment: [String: String] = ProcessInfo.processInfo.environment) -> String? {
        if let pager = environment["ADMIN_PAGER"] ?? environment["PAGER"] {
            return pager.trimmingCharacters(in: .whitespaces).isEmpty ? nil : pager
        }
        return FileManager.default.isExecutableFile(atPath: "/usr/bin/less") ? "less -FRSX" : "more"
    }

    /// Starts `command`; nil when it cannot be started (the text then goes to stdout).
    init?(command: String) {
        var descriptors: [Int32] = [0, 0]
        guard pipe(&descriptors) == 0 else { return nil }
        // Only the child's copy on stdin is the pipe's read end: the console keeps neither end open in the child.
        _ = fcntl(descriptors[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(descriptors[1], F_SETFD, FD_CLOEXEC)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, descriptors[0], STDIN_FILENO)
        let words: [String] = ["/bin/sh", "-c", command]
        let arguments = words.map { strdup($0) } + [nil]
        defer { arguments.forEach { free($0) } }
        var pid: pid_t = 0
        // The pager handles its keys and signals its own way.
        let result = ChildProcess.withShellSignals { posix_spawn(&pid, "/bin/sh", &actions, &$0, arguments, environ) }
        close(descriptors[0])
        guard result == 0 else {
            close(descriptors[1])
            return nil
        }
        self.pid = pid
        input = descriptors[1]
    }

    deinit { finish() }

    /// Sends bytes to the pager; throws `OutputFile.Closed.byReader` once the operator has quit it.
    func write(_ bytes: UnsafeBufferPointer<UInt8>) throws {
        guard input >= 0 else { throw OutputFile.Closed.byReader }
        try Interrupt.whilePaging { try OutputFile.writeAll(bytes, to: input) }
    }

    /// Ends the input and waits until the operator quits the pager, which owns the terminal until then.
    func finish() {
        guard input >= 0 else { return }
        close(input)
        input = -1
        Interrupt.whilePaging {
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        }
    }
}

/// Text of unknown length for the terminal (`get`'s JSON): held until it runs longer than the screen, then sent
/// through the pager from its first line, as psql pages a result; shorter text goes to stdout when it ends.
final class PagedStream {
    private enum State {
        case holding([UInt8], lines: Int)
        case paging(Pager)
        /// The pager could not start: straight to stdout.
        case direct
    }

    private let rows: Int
    private let command: String
    private var state = State.holding([], lines: 0)

    /// A stream paged through `command` once it holds `rows` lines or more.
    init(rows: Int, command: String) {
        self.rows = rows
        self.command = command
    }

    /// Sends `bytes` on: held, to the pager, or to stdout.
    func write(_ bytes: UnsafeBufferPointer<UInt8>) throws {
        switch state {
        case .paging(let pager): try pager.write(bytes)
        case .direct: try OutputFile.writeAll(bytes, to: STDOUT_FILENO)
        case .holding(var held, let lines):
            held.append(contentsOf: bytes)
            let count = lines + bytes.lazy.filter { $0 == UInt8(ascii: "\n") }.count
            guard count >= rows else { return state = .holding(held, lines: count) }
            if let pager = Pager(command: command) {
                state = .paging(pager)
            } else {
                state = .direct
            }
            try held.withUnsafeBufferPointer { try write($0) }
        }
    }

    /// Sends what is held to stdout, or waits until the operator quits the pager.
    func finish() throws {
        switch state {
        case .paging(let pager): pager.finish()
        case .direct: break
        case .holding(let held, _): try held.withUnsafeBufferPointer { try OutputFile.writeAll($0, to: STDOUT_FILENO) }
        }
        state = .direct
    }
}
