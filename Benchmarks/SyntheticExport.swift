import Foundation

/// A Makestagram-shaped Firebase export of about a given size, written streaming and deterministically. A stand-in
/// until the console's own generator exists: users, posts under their owners with push-ID keys and float-second
/// timestamps, likes, follows both ways, timelines, chats with both members' copies, and messages.
struct SyntheticExport {
    var targetBytes: Int

    private static let alphabet = Array("-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz".utf8)
    private static let names = ["ana", "bo", "chloé", "dmitri", "eun-ji", "fátima", "giorgos", "hana", "Ivan", "日本太郎"]

    func write(to path: String) throws {
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        guard let handle = FileHandle(forWritingAtPath: path) else { throw CocoaError(.fileWriteUnknown) }
        defer { try? handle.close() }
        var out = ""
        out.reserveCapacity(1 << 21)
        func flush(force: Bool = false) {
            if force || out.utf8.count > 1 << 20 {
                handle.write(Data(out.utf8))
                out.removeAll(keepingCapacity: true)
            }
        }
        // About 3 KB of JSON per user across all nodes.
        let users = max(10, targetBytes / 3000)
        func uid(_ index: Int) -> String { "uid\(String(format: "%08d", index))XyZ" }
        func pushID(_ time: Int, _ counter: Int) -> String {
            var characters = [UInt8](repeating: 0, count: 20)
            var value = time
            for position in stride(from: 7, through: 0, by: -1) {
                characters[position] = Self.alphabet[value % 64]
                value /= 64
            }
            var random = UInt64(truncatingIfNeeded: counter) &* 0x9E37_79B9_7F4A_7C15
            for position in 8..<20 {
                characters[position] = Self.alphabet[Int(random % 64)]
                random = random / 64 ^ (random << 7)
            }
            return String(decoding: characters, as: UTF8.self)
        }
        func posts(of user: Int) -> [(key: String, created: Double)] {
            (0..<(2 + user % 5)).map { index in
                let milliseconds = 1_497_000_000_000 + user * 7919 + index * 104_729
                return (pushID(milliseconds, user * 31 + index), Double(milliseconds) / 1000 + 0.00123)
            }
        }
        func followees(of user: Int) -> [Int] {
            (1...(3 + user % 7)).map { (user + $0 * $0 * 13) % users }.filter { $0 != user }
        }

        out += "{\n  \"chats\": {"
        for user in 0..<users {
            let other = (user + 1) % users
            let (low, high) = user < other ? (user, other) : (other, user)
            out += (user == 0 ? "\n" : ",\n") + "    \"\(uid(user))\": {\"\(pushID(1_497_500_000_000 + low, high))\": "
            out += "{\"title\": \"\(Self.names[low % 10]), \(Self.names[high % 10])\", \"memberHash\": \"\(low &* 7_919 ^ high)\", "
            out += "\"members\": {\"\(uid(low))\": true, \"\(uid(high))\": true}, "
            out += "\"lastMessage\": \"\(Self.names[low % 10]): see you at 8 😀\", \"lastMessageSent\": 1497918951.91262}}"
            flush()
        }
        // Mirrors following (follower lists are built the same way here; the benchmark measures reading).
        out += "\n  },\n  \"followers\": {"
        var first = true
        for user in 0..<users {
            out += (first ? "\n" : ",\n") + "    \"\(uid(user))\": {" + followees(of: user).map { "\"\(uid($0))\": true" }.joined(separator: ", ") + "}"
            first = false
            flush()
        }
        out += "\n  },\n  \"following\": {"
        for user in 0..<users {
            out += (user == 0 ? "\n" : ",\n") + "    \"\(uid(user))\": {" + followees(of: user).map { "\"\(uid($0))\": true" }.joined(separator: ", ") + "}"
            flush()
        }
        out += "\n  },\n  \"messages\": {"
        for user in 0..<users {
            out += (user == 0 ? "\n" : ",\n") + "    \"\(pushID(1_497_500_000_000 + user, user + 1))\": {"
            out += (0..<3).map { index in
                "\"\(pushID(1_497_600_000_000 + user * 10 + index, index))\": {\"content\": \"message \(index) — ¿qué tal?\", "
                    + "\"timestamp\": \(1_497_918_951.912 + Double(index)), \"sender\": {\"uid\": \"\(uid(user))\", \"username\": \"\(Self.names[user % 10])\"}}"
            }.joined(separator: ", ") + "}"
            flush()
        }
        out += "\n  },\n  \"postLikes\": {"
        first = true
        for user in 0..<users {
            for post in posts(of: user) {
                out += (first ? "\n" : ",\n") + "    \"\(post.key)\": {" + followees(of: user).prefix(4).map { "\"\(uid($0))\": true" }.joined(separator: ", ") + "}"
                first = false
            }
            flush()
        }
        out += "\n  },\n  \"posts\": {"
        for user in 0..<users {
            out += (user == 0 ? "\n" : ",\n") + "    \"\(uid(user))\": {"
            out += posts(of: user).map { post in
                "\"\(post.key)\": {\"created_at\": \(post.created), \"image_height\": 374.9999999999999, "
                    + "\"image_url\": \"https://firebasestorage.googleapis.com/v0/b/makestagram.appspot.com/o/images%2F\(post.key).jpg?alt=media\", "
                    + "\"like_count\": \(min(4, followees(of: user).count)), \"poster\": {\"uid\": \"\(uid(user))\", \"username\": \"\(Self.names[user % 10])\"}}"
            }.joined(separator: ", ") + "}"
            flush()
        }
        out += "\n  },\n  \"timeline\": {"
        for user in 0..<users {
            out += (user == 0 ? "\n" : ",\n") + "    \"\(uid(user))\": {"
            out += ([user] + followees(of: user)).flatMap { owner in posts(of: owner).map { "\"\($0.key)\": {\"poster_uid\": \"\(uid(owner))\"}" } }
                .joined(separator: ", ") + "}"
            flush()
        }
        out += "\n  },\n  \"users\": {"
        for user in 0..<users {
            out += (user == 0 ? "\n" : ",\n") + "    \"\(uid(user))\": {\"username\": \"\(Self.names[user % 10])\(user)\"}"
            flush()
        }
        out += "\n  }\n}\n"
        flush(force: true)
    }
}
