import Foundation

/// An advisory lock on a file (flock), released when this object goes away or the process dies, even by
/// `kill -9`: that is what lets consoles count each other without leaving stale state behind.
final class FileLock {
    private let descriptor: Int32
    let path: String

    init(path: String) throws {
        self.path = path
        descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw StorageError(.cluster, "cannot open lock file \(path): \(String(cString: strerror(errno)))")
        }
    }

    deinit {
        // Unlock before closing: a process another thread is spawning holds a copy of the descriptor until it
        // execs (O_CLOEXEC closes it only then), and the lock belongs to the open file, so closing alone could
        // leave it held for that moment, and a console quitting at once would think another one still open.
        flock(descriptor, LOCK_UN)
        close(descriptor)
    }

    /// Takes the lock; returns false only when `wait` is false and someone else holds a conflicting lock.
    func lock(exclusive: Bool, wait: Bool) throws -> Bool {
        let operation = (exclusive ? LOCK_EX : LOCK_SH) | (wait ? 0 : LOCK_NB)
        while flock(descriptor, operation) != 0 {
            if errno == EINTR { continue }
            if errno == EWOULDBLOCK { return false }
            throw StorageError(.cluster, "cannot lock \(path): \(String(cString: strerror(errno)))")
        }
        return true
    }
}
