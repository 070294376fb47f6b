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

    deinit { close(descriptor) }

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
