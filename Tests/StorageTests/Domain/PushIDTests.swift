import Foundation
import PostgresTestSupport
import Testing

@testable import Storage

@Suite("Push IDs (no server)")
struct PushIDTests {
    @Test func pushIDsSortByCreationTimeAndNeverRepeat() {
        let clock = Mutex(Date(timeIntervalSince1970: 1_500_000_000))
        let generator = PushIDGenerator { clock.withLock { $0 } }
        var keys: [String] = []
        for step in 0..<2000 {
            if step % 500 == 0 { clock.withLock { $0 = $0.addingTimeInterval(0.001) } }
            keys.append(generator.next())
        }
        #expect(keys == keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) })
        #expect(Set(keys).count == keys.count)
        #expect(PushIDGenerator.timestamp(of: keys[0]) == Date(timeIntervalSince1970: 1_500_000_000.001))
    }
}
