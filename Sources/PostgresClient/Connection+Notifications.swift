import CLibPQ
import Foundation

/// A message of PostgreSQL's LISTEN/NOTIFY, delivered once the sending transaction committed.
public struct ServerNotification: Sendable, Equatable {
    /// The channel it was sent on.
    public var channel: String
    /// The payload, up to 8000 bytes of text.
    public var payload: String
}

extension Connection {
    /// Starts receiving notifications on `channel` (`LISTEN`); they queue until `notifications(waitingAtMost:)`.
    public func listen(_ channel: String) throws {
        try execute("LISTEN \(identifier: channel)")
    }

    /// Stops receiving on `channel` and forgets what was queued for it.
    public func unlisten(_ channel: String) throws {
        try execute("UNLISTEN \(identifier: channel)")
        while let notification = PQnotifies(handle) { PQfreemem(notification) }
    }

    /// The notifications that arrived, waiting up to `timeout` seconds for the first when none is queued, so a
    /// caller can look at a cancellation flag between waits. Empty when the time passed with nothing.
    public func notifications(waitingAtMost timeout: TimeInterval) throws -> [ServerNotification] {
        var received = try takeQueuedNotifications()
        guard received.isEmpty else { return received }
        var descriptor = pollfd(fd: PQsocket(handle), events: Int16(POLLIN), revents: 0)
        guard descriptor.fd >= 0 else { throw connectionError(statement: nil) }
        let ready = poll(&descriptor, 1, Int32((timeout * 1000).rounded()))
        guard ready > 0 else {
            if ready < 0 && errno != EINTR { throw DatabaseError(.connectionLost, "poll failed: errno \(errno)") }
            return []
        }
        received = try takeQueuedNotifications()
        return received
    }

    /// Reads whatever the server sent and returns the notifications in it, in commit order.
    private func takeQueuedNotifications() throws -> [ServerNotification] {
        // libpq: "PQconsumeInput normally returns 1 indicating 'no error', but returns 0 if there was some kind
        // of trouble", which for a listener means the connection broke.
        guard PQconsumeInput(handle) == 1 else { throw connectionError(statement: nil) }
        var received: [ServerNotification] = []
        while let notification = PQnotifies(handle) {
            defer { PQfreemem(notification) }
            received.append(
                ServerNotification(
                    channel: String(cString: notification.pointee.relname),
                    payload: String(cString: notification.pointee.extra)))
        }
        return received
    }
}
