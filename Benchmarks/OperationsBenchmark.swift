import Foundation
import PostgresClient
import Storage

/// `operations`: the app's operations on an embedded server of their own (fans must number at least 1,000). `post create` and `post delete` by a
/// user with --followers followers (the fan-out is one statement), next to the bare INSERT … SELECT of the same
/// timeline rows; then likes and unlikes per second from --clients connections at once, on one shared post and
/// spread over many; then chat messages per second.
struct OperationsBenchmark {
    let followers: Int
    let clients: Int
    let runs: Int
    let duration: Double
    let work: String

    func run() throws {
        let (cluster, _, conninfo) = try openBenchmarkServer(work: work)
        defer { cluster.close() }
        let store = try Store(conninfo: conninfo)
        try store.migrate()
        // The benchmark's own statements (set-up, the bare SQL it compares with) go on a connection of its own.
        let sql = try Connection(conninfo: conninfo)
        try setUp(sql)

        print("data: star has \(followers) followers; \(clients) clients for the concurrent runs, \(duration) s each")
        print("| operation | runs | median ms | min ms | max ms | rows per run |")
        print("|---|---|---|---|---|---|")
        var created: [Double] = [], deleted: [Double] = [], bare: [Double] = []
        var entries = 0
        for _ in 0..<runs {
            var key = ""
            created.append(
                try seconds {
                    let (post, written) = try store.createPost(owner: "star", imageURL: "u", imageHeight: 1)
                    (key, entries) = (post.key, written)
                })
            deleted.append(try seconds { _ = try store.deletePost(owner: "star", key: key) })
            bare.append(
                try seconds {
                    _ = try sql.withTransaction(rollback: true) {
                        try sql.execute(
                            """
                            INSERT INTO timeline (uid, post_key, poster_uid)
                            SELECT follower_uid, 'bench-post', 'star' FROM followers WHERE uid = 'star'
                            """)
                    }
                })
        }
        row("post create (owner + \(followers) followers)", created, rows: entries)
        row("bare INSERT … SELECT of the follower entries", bare, rows: followers)
        row("post delete (post, likes, \(entries) entries)", deleted, rows: entries)

        print("")
        print("| concurrent work | clients | operations | operations/s |")
        print("|---|---|---|---|")
        for (name, posts) in [("like/unlike, one shared post", 1), ("like/unlike, 1,000 posts", 1000)] {
            for clientCount in Set([1, clients]).sorted() {
                let count = try concurrently(conninfo, clientCount) { store, generator in
                    let fan = "fan\(Int.random(in: 0..<1000, using: &generator))"
                    let post = "bench-\(Int.random(in: 0..<posts, using: &generator))"
                    if Bool.random(using: &generator) {
                        _ = try store.like(fan, post: post)
                    } else {
                        _ = try store.unlike(fan, post: post)
                    }
                }
                print("| \(name) | \(clientCount) | \(count) | \(format(Double(count) / duration)) |")
            }
        }
        for clientCount in Set([1, clients]).sorted() {
            let count = try concurrently(conninfo, clientCount) { store, generator in
                let fan = Int.random(in: 0..<1000, using: &generator)
                _ = try store.sendMessage(from: "fan\(fan)", to: "star", text: "message from \(fan)")
            }
            print(
                "| chat send (fans to star, 1,000 chats) | \(clientCount) | \(count) | \(format(Double(count) / duration)) |"
            )
        }
        let sum = try sql.query(
            """
            SELECT count(*) FILTER (WHERE like_count <> (SELECT count(*) FROM post_likes l WHERE l.post_key = p.post_key))
            FROM posts p
            """)[0].decode(Int.self, at: 0)
        print("\nposts whose like_count differs from their likes afterwards: \(sum)")
    }

    /// Users `star` and `fan0`… `fan<followers - 1>`, every fan following star, and 1,000 posts of star's; once.
    private func setUp(_ sql: Connection) throws {
        let existing = try sql.query("SELECT count(*) FROM followers WHERE uid = 'star'")[0].decode(Int.self, at: 0)
        guard existing != followers else { return }
        FileHandle.standardError.write(Data("setting up star with \(followers) followers…\n".utf8))
        try sql.withTransaction {
            for table in Store.treeTables { try sql.execute("TRUNCATE \(identifier: table)") }
            try sql.execute(
                """
                INSERT INTO users (uid, username)
                SELECT 'star', 'Star' UNION ALL SELECT 'fan' || i, 'Fan ' || i FROM generate_series(0, \(followers - 1)) i
                """)
            try sql.execute(
                """
                INSERT INTO following (uid, followee_uid) SELECT uid, 'star' FROM users WHERE uid <> 'star'
                """)
            try sql.execute(
                """
                INSERT INTO followers (uid, follower_uid) SELECT 'star', uid FROM users WHERE uid <> 'star'
                """)
            try sql.execute(
                """
                INSERT INTO posts (owner_uid, post_key, image_url, image_height, created_at, like_count, poster_uid,
                    poster_username)
                SELECT 'star', 'bench-' || i, 'u', 1, 0, 0, 'star', 'Star' FROM generate_series(0, 999) i
                """)
        }
        try sql.execute("VACUUM ANALYZE")
    }

    /// Runs `operation` in a loop on `count` connections for `duration` seconds; returns how many completed.
    private func concurrently(
        _ conninfo: String, _ count: Int,
        _ operation: @escaping @Sendable (Store, inout BenchmarkGenerator) throws -> Void
    ) throws -> Int {
        let stores = try (0..<count).map { _ in try Store(conninfo: conninfo) }
        let totals = UnsafeMutableBufferPointer<Int>.allocate(capacity: count)
        totals.initialize(repeating: 0)
        defer { totals.deallocate() }
        let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(duration * 1e9)
        nonisolated(unsafe) let shared = (stores, totals)
        DispatchQueue.concurrentPerform(iterations: count) { client in
            var generator = BenchmarkGenerator(state: UInt64(client + 1) * 0x9E37_79B9)
            var done = 0
            while DispatchTime.now().uptimeNanoseconds < deadline {
                do { try operation(shared.0[client], &generator) } catch { fatalError("client \(client): \(error)") }
                done += 1
            }
            shared.1[client] = done
        }
        return totals.reduce(0, +)
    }

    private func row(_ name: String, _ times: [Double], rows: Int) {
        let ms = times.map { $0 * 1000 }
        print(
            "| \(name) | \(ms.count) | \(format(median(ms))) | \(format(ms.min()!)) | \(format(ms.max()!)) | \(rows) |")
    }
}

/// A small deterministic generator (SplitMix64), so runs pick the same users and posts.
struct BenchmarkGenerator: RandomNumberGenerator {
    var state: UInt64

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
