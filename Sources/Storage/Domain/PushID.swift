import Foundation

/// Firebase push IDs (`childByAutoId`): 8 characters of milliseconds since 1970 and 12 random ones, from an
/// ASCII-ordered alphabet, so that keys sort by creation time. Within one millisecond the random part is
/// incremented, so keys made by one generator are strictly increasing.
public final class PushIDGenerator: @unchecked Sendable {
    /// Firebase's alphabet, in ASCII order.
    static let alphabet = Array("-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz".utf8)
    /// The length of a push ID.
    static let keyLength = 20

    /// The process's generator: keys made through it increase strictly even within one millisecond, which
    /// generators made per call could not promise.
    public static let shared = PushIDGenerator()

    private let lock = NSLock()
    private var lastMilliseconds: Int64 = -1
    private var lastRandom = [Int](repeating: 0, count: 12)
    private let now: () -> Date

    /// A generator on the system clock (or on `now`, for tests).
    public init(now: @escaping () -> Date = Date.init) {
        self.now = now
    }

    /// The next push ID.
    public func next() -> String {
        let milliseconds = Int64((now().timeIntervalSince1970 * 1000).rounded(.down))
        let random: [Int] = lock.withLock {
            if milliseconds == lastMilliseconds {
                // Increment the random part as a base-64 number; it cannot realistically overflow 64^12.
                var index = 11
                while index >= 0, lastRandom[index] == 63 {
                    lastRandom[index] = 0
                    index -= 1
                }
                if index >= 0 { lastRandom[index] += 1 }
            } else {
                lastMilliseconds = milliseconds
                lastRandom = (0..<12).map { _ in Int.random(in: 0..<64) }
            }
            return lastRandom
        }
        var characters = [UInt8](repeating: 0, count: Self.keyLength)
        var time = milliseconds
        for position in stride(from: 7, through: 0, by: -1) {
            characters[position] = Self.alphabet[Int(time % 64)]
            time /= 64
        }
        for (offset, value) in random.enumerated() { characters[8 + offset] = Self.alphabet[value] }
        return String(decoding: characters, as: UTF8.self)
    }

    /// The creation time encoded in a push ID's first 8 characters, if `key` is one.
    public static func timestamp(of key: String) -> Date? {
        let bytes = Array(key.utf8)
        guard bytes.count == 20 else { return nil }
        var milliseconds: Int64 = 0
        for byte in bytes.prefix(8) {
            guard let value = alphabet.firstIndex(of: byte) else { return nil }
            milliseconds = milliseconds * 64 + Int64(value)
        }
        return Date(timeIntervalSince1970: Double(milliseconds) / 1000)
    }
}
