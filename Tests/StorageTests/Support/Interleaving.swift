import Foundation
import PostgresTestSupport
import Synchronization
import Testing

@testable import Storage

/// Runs `first` in a transaction on one connection and, while it is open, `second` on another, which must
/// wait for a lock the first holds; then commits the first (at once, or when `holdingUntilSecondEnds`, once the
/// second has given up). Returns the second's error, if any.
func whileHolding(
    _ database: TestDatabase, _ first: (Store) throws -> Void, holdingUntilSecondEnds: Bool = false,
    then second: @escaping @Sendable (Store) throws -> Void
) throws -> String? {
    let one = Store(connection: try database.connect())
    let two = Store(connection: try database.connect())
    let twoPID = try two.connection.query("SELECT pg_backend_pid()")[0].decode(Int.self, at: 0)
    nonisolated(unsafe) let sendableTwo = two
    let secondError = Mutex<String?>(nil)
    let finished = DispatchSemaphore(value: 0)
    try one.connection.withTransaction {
        try first(one)
        DispatchQueue.global().async {
            do { try second(sendableTwo) } catch { secondError.withLock { $0 = "\(error)" } }
            finished.signal()
        }
        var waiting = false
        for _ in 0..<200 where !waiting {
            Thread.sleep(forTimeInterval: 0.02)
            waiting =
                try one.connection.query(
                    """
                    SELECT wait_event_type = 'Lock' FROM pg_stat_activity WHERE pid = \(twoPID)
                    """
                ).first?.decode(Bool?.self, at: 0) == true
        }
        #expect(waiting, "the second operation did not wait for the first one's lock")
        if holdingUntilSecondEnds {
            #expect(finished.wait(timeout: .now() + 10) == .success, "the second operation waited on")
            finished.signal()
        }
    }
    finished.wait()
    return secondError.withLock { $0 }
}
