import Foundation
import Synchronization

/// Ctrl-C during a command that only ends when asked (`--follow`): while such a command runs, SIGINT sets a flag
/// the command looks at between waits, so it ends cleanly and the console goes on instead of dying.
enum Interrupt {
    private static let received = Atomic<Bool>(false)

    /// Runs `body` with SIGINT caught; `isInterrupted` turns true at the first Ctrl-C. The previous handling of
    /// SIGINT is back when `body` returns.
    static func catching<Result>(_ body: (_ isInterrupted: () -> Bool) throws -> Result) rethrows -> Result {
        received.store(false, ordering: .relaxed)
        // Only an atomic store: nothing else is safe in a signal handler.
        let previous = signal(SIGINT) { _ in Interrupt.received.store(true, ordering: .relaxed) }
        // A parent may have started us with SIGINT blocked (the mask survives exec), which would leave Ctrl-C
        // pending forever.
        var unblocked = sigset_t(), previousMask = sigset_t()
        sigemptyset(&unblocked)
        sigaddset(&unblocked, SIGINT)
        pthread_sigmask(SIG_UNBLOCK, &unblocked, &previousMask)
        defer {
            pthread_sigmask(SIG_SETMASK, &previousMask, nil)
            signal(SIGINT, previous)
        }
        return try body { received.load(ordering: .relaxed) }
    }
}
