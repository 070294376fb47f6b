import Foundation
import Storage
import Synchronization

/// Ctrl-C. The signal handler only counts the signal and wakes a watcher thread through a pipe (nothing else is
/// safe in a handler); the watcher asks the server to cancel the running statement (libpq's cancel request), and
/// commands that wait on their own (`--follow`, `watch`) look at `isPending` between waits. The command then
/// fails with the server's "canceling statement due to user request", its transaction rolls back, and the
/// console returns to the prompt or, in a script, stops. A third Ctrl-C before the console got back ends the
/// process at once; the server rolls back whatever was open. SIGTERM and SIGHUP cancel the running statement,
/// close the session (stopping the embedded server if no other console uses it) and exit with 128 + the signal.
enum Interrupt {
    private static let count = Atomic<Int>(0)
    /// Whether Ctrl-C came since the current command began, consumed or not: the terminal echoed `^C` where
    /// the cursor stood, and the console's next line must start on a line of its own.
    private static let cameDuringCommand = Atomic<Bool>(false)
    private static let canceller = Mutex<(@Sendable () -> Void)?>(nil)
    private static let isCommandRunning = Atomic<Bool>(false)
    /// The pager owns the terminal: Ctrl-C is its key (less stops a search with it), not the console's.
    private static let isPaging = Atomic<Bool>(false)
    /// SIGTERM or SIGHUP received (its number), 0 for none.
    private static let termination = Atomic<Int32>(0)
    /// What ends the console cleanly from the watcher thread: closes the session (and stops the embedded server
    /// when this was its last console).
    private static let terminationHandler = Mutex<(@Sendable () -> Void)?>(nil)
    nonisolated(unsafe) private static var wakeDescriptor: Int32 = -1

    /// Catches SIGINT for the rest of the process; call once, before any command runs.
    static func install() {
        var descriptors: [Int32] = [0, 0]
        guard pipe(&descriptors) == 0 else { return }
        _ = fcntl(descriptors[1], F_SETFL, fcntl(descriptors[1], F_GETFL) | O_NONBLOCK)
        wakeDescriptor = descriptors[1]
        let readDescriptor = descriptors[0]
        let watcher = Thread {
            var byte: UInt8 = 0
            while read(readDescriptor, &byte, 1) >= 0 || errno == EINTR {
                if let signal = Optional(termination.load(ordering: .relaxed)), signal != 0 {
                    // `timeout`, `systemctl stop`, a closed terminal: cancel what runs (its transaction rolls
                    // back), close the session, and leave with the shell's status for the signal.
                    canceller.withLock { $0?() }
                    terminationHandler.withLock { $0?() }
                    _exit(128 + signal)
                }
                // A cancel request only stops a statement that is running when it arrives; between two
                // statements it is lost. So ask again until the command has ended.
                // The lock is held across the request, so that `consume()` returns only once no request is
                // still on its way to cancel whatever the command runs next (a follow's UNLISTEN).
                while canceller.withLock({ handle in
                    guard isPending && isCommandRunning.load(ordering: .relaxed) else { return false }
                    handle?()
                    return true
                }) {
                    usleep(100_000)
                }
            }
        }
        watcher.name = "admin-interrupt"
        watcher.start()
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { _ in
            if Interrupt.isPaging.load(ordering: .relaxed) { return }
            Interrupt.cameDuringCommand.store(true, ordering: .relaxed)
            if Interrupt.count.add(1, ordering: .relaxed).newValue >= 3 { _exit(130) }
            var byte: UInt8 = 1
            _ = write(Interrupt.wakeDescriptor, &byte, 1)
        }
        sigemptyset(&action.sa_mask)
        sigaction(SIGINT, &action, nil)
        var terminate = sigaction()
        terminate.__sigaction_handler.sa_handler = { signal in
            Interrupt.termination.store(signal, ordering: .relaxed)
            var byte: UInt8 = 2
            _ = write(Interrupt.wakeDescriptor, &byte, 1)
        }
        sigemptyset(&terminate.sa_mask)
        sigaction(SIGTERM, &terminate, nil)
        sigaction(SIGHUP, &terminate, nil)
        // A parent may have started us with SIGINT blocked (the mask survives exec), which would leave Ctrl-C
        // pending forever.
        var unblocked = sigset_t()
        sigemptyset(&unblocked)
        sigaddset(&unblocked, SIGINT)
        sigaddset(&unblocked, SIGTERM)
        sigaddset(&unblocked, SIGHUP)
        pthread_sigmask(SIG_UNBLOCK, &unblocked, nil)
    }

    /// Whether Ctrl-C was pressed since the current command began.
    static var isPending: Bool { count.load(ordering: .relaxed) > 0 }

    /// A command begins: earlier Ctrl-Cs are forgotten, and new ones cancel what it runs.
    static func commandStarted() {
        count.store(0, ordering: .relaxed)
        cameDuringCommand.store(false, ordering: .relaxed)
        isCommandRunning.store(true, ordering: .relaxed)
    }

    /// Ctrl-C was handled as the way to end something (a follow, a watch, a line at the prompt).
    static func consume() {
        canceller.withLock { _ in count.store(0, ordering: .relaxed) }
    }

    /// Whether Ctrl-C came during the current (or last) command, even one that ended a watch or a follow.
    static var cameDuringCommandOrSince: Bool { cameDuringCommand.load(ordering: .relaxed) }

    /// The command ended: Ctrl-C no longer has a statement to cancel.
    static func commandEnded() {
        isCommandRunning.store(false, ordering: .relaxed)
    }

    /// Runs `body`, which waits for the operator (a question), with no statement for Ctrl-C to cancel: the
    /// watcher does not ask the server again and again meanwhile, and `body` sees `isPending`.
    static func whileWaitingForInput<Result>(_ body: () -> Result) -> Result {
        let wasRunning = isCommandRunning.exchange(false, ordering: .relaxed)
        defer { isCommandRunning.store(wasRunning, ordering: .relaxed) }
        return body()
    }

    /// Runs `body` while the pager shows output: Ctrl-C goes to the pager alone, so that neither cancels the
    /// command nor counts toward the third Ctrl-C that ends the console.
    static func whilePaging<Result>(_ body: () throws -> Result) rethrows -> Result {
        let wasPaging = isPaging.exchange(true, ordering: .relaxed)
        defer { isPaging.store(wasPaging, ordering: .relaxed) }
        return try body()
    }

    /// What SIGTERM and SIGHUP run (on the watcher thread) before the process exits.
    static func onTermination(_ handler: (@Sendable () -> Void)?) {
        terminationHandler.withLock { $0 = handler }
    }

    /// The connection whose running statement Ctrl-C cancels (the session's, once it connected).
    static func cancels(_ handle: (@Sendable () -> Void)?) {
        canceller.withLock { $0 = handle }
    }
}
