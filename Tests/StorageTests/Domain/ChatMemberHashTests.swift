import Foundation
import PostgresTestSupport
import Testing

@testable import Storage

@Suite("Chat member hash")
struct ChatMemberHashTests {
    static let vectors: [(String, String, Int64)] = [
        ("uid_1", "uid_2", 423_737_602_377_814_706), ("b", "a", -1_886_276_961_191_958_862),
        ("ñandú", "日本", 5_552_730_658_041_162_941),
    ]

    @Test func theStableHashMatchesTheTestVectorsInEitherOrder() {
        for (a, b, expected) in Self.vectors {
            #expect(ChatMemberHash.stable(a, b) == expected)
            #expect(ChatMemberHash.stable(b, a) == expected)
            #expect(ChatMemberHash.stableText(a, b) == String(expected))
        }
    }

}

@Suite("Chat member hash in SQL")
struct ChatMemberHashSQLTests {
    @Test func theSQLFunctionAgreesWithSwift() throws {
        let store = try makeStore()
        for (a, b, expected) in ChatMemberHashTests.vectors {
            let sql = try store.connection.query("SELECT chat_member_hash(\(a), \(b))")[0].decode(String.self, at: 0)
            #expect(sql == String(expected))
        }
        // Random uids, including multi-byte ones, agree between the two implementations.
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array("abcXYZ019-_ñ日本🎉")
        for _ in 0..<50 {
            let a = String((0..<Int.random(in: 1...30, using: &generator)).map { _ in alphabet.randomElement()! })
            let b = String((0..<Int.random(in: 1...30, using: &generator)).map { _ in alphabet.randomElement()! })
            let sql = try store.connection.query("SELECT chat_member_hash(\(a), \(b))")[0].decode(String.self, at: 0)
            #expect(sql == ChatMemberHash.stableText(a, b), "\(a) \(b)")
        }
    }
}
