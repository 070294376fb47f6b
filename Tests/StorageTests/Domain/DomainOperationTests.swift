import Foundation
import PostgresTestSupport
import Testing
import TreeTestSupport

@testable import Storage

@Suite("The app's operations")
struct DomainOperationTests {

    @Test func eachOperationWritesWhatTheAppWould() throws {
        let store = try consistentStore()
        var tree = consistentTree

        _ = try store.addUser(uid: "dave", username: "dave")
        tree = tree.setting("users/dave", #"{"username": "dave"}"#)
        try expectTree(store, tree)

        #expect(try store.follow("dave", "bob") == FollowResult(changed: true, timelineEntries: 2))
        #expect(try store.follow("dave", "bob") == FollowResult(changed: false, timelineEntries: 0))
        tree = tree.setting("following/dave/bob", "true").setting("followers/bob/dave", "true")
            .setting("timeline/dave", #"{"-Pb1": {"poster_uid": "bob"}, "-Pb2": {"poster_uid": "bob"}}"#)
        try expectTree(store, tree)

        let now = Date(timeIntervalSince1970: 1_700_000_000.25)
        let (post, entries) = try store.createPost(
            owner: "bob", imageURL: "https://i/new.jpg", imageHeight: 300, now: now)
        #expect(entries == 4)
        #expect(post.key.count == 20 && PushIDGenerator.timestamp(of: post.key) != nil)
        tree = tree.setting(
            "posts/bob/\(post.key)",
            """
            {"image_url": "https://i/new.jpg", "image_height": 300, "created_at": 1700000000.25, "like_count": 0,
             "poster": {"uid": "bob", "username": "bob"}}
            """)
        for uid in ["alice", "bob", "carol", "dave"] {
            tree = tree.setting("timeline/\(uid)/\(post.key)", #"{"poster_uid": "bob"}"#)
        }
        try expectTree(store, tree)

        #expect(try store.like("dave", post: post.key) == LikeResult(changed: true, likeCount: 1))
        #expect(try store.like("dave", post: post.key) == LikeResult(changed: false, likeCount: 1))
        #expect(try store.unlike("alice", post: post.key) == LikeResult(changed: false, likeCount: 1))
        tree = tree.setting("postLikes/\(post.key)/dave", "true").setting("posts/bob/\(post.key)/like_count", "1")
        try expectTree(store, tree)

        #expect(try store.unfollow("carol", "alice") == FollowResult(changed: true, timelineEntries: 1))
        #expect(try store.unfollow("carol", "alice") == FollowResult(changed: false, timelineEntries: 0))
        tree = tree.removing("following/carol/alice").removing("followers/alice").removing("timeline/carol/-Pa1")
        try expectTree(store, tree)

        #expect(try store.renameUser(uid: "bob", to: "robert", propagate: true) == 3)
        tree = tree.setting("users/bob/username", "\"robert\"")
        for key in ["-Pb1", "-Pb2", post.key] { tree = tree.setting("posts/bob/\(key)/poster/username", "\"robert\"") }
        try expectTree(store, tree)

        let removed = try store.deletePost(owner: "alice", key: "-Pa1")
        #expect(removed.map(\.rows) == [1, 1, 1])
        tree = tree.removing("posts/alice").removing("postLikes/-Pa1").removing("timeline/alice/-Pa1")
        try expectTree(store, tree)

        #expect(try store.unlike("dave", post: post.key) == LikeResult(changed: true, likeCount: 0))
        tree = tree.removing("postLikes/\(post.key)").setting("posts/bob/\(post.key)/like_count", "0")
        try expectTree(store, tree)
        #expect(try store.check().allSatisfy { $0.isClean })
    }

    @Test func aPostReachesEveryFollowerWhateverTheirNumber() throws {
        try Self.expectPostsReachEveryFollower(try makeStore())
    }

    /// A new post reaches the poster's timeline and every follower's, however many: none, one, one either side
    /// of the most Citus sends as rows, exactly that many, many more; a poster listed as their own follower gets
    /// one entry. `store` is empty, migrated (and distributed, on Citus).
    static func expectPostsReachEveryFollower(_ store: Store) throws {
        let page = AppOperations.fanOutRows
        let counts = [0, 1, page - 1, page, page + 1, 2 * page + 3]
        let followers = (0..<(2 * page + 3)).map { "f" + String(1_000_000 + $0 * 7) }
        func poster(_ index: Int) -> String { "p\(index)" }
        let users = TreeValue.object(
            Dictionary(
                uniqueKeysWithValues: counts.indices.map { (TreeKey(poster($0)), .object(["username": .string("u")])) })
        )
        let followed = TreeValue.object(
            Dictionary(
                uniqueKeysWithValues: counts.enumerated().map { index, count in
                    let mine = followers.prefix(count) + (index == 1 ? [poster(index)] : [])
                    return (
                        TreeKey(poster(index)),
                        .object(Dictionary(uniqueKeysWithValues: mine.map { (TreeKey($0), .bool(true)) }))
                    )
                }))
        try importJSON(TreeValue.object(["users": users, "followers": followed]).json, into: store)
        for (index, count) in counts.enumerated() {
            let (post, entries) = try store.createPost(owner: poster(index), imageURL: "u", imageHeight: 1)
            #expect(entries == count + 1, "\(count) followers")
            let rows = try store.connection.query(
                "SELECT uid, poster_uid FROM timeline WHERE post_key = \(post.key) ORDER BY uid")
            let reached = try rows.map { try $0.decode(String.self, at: 0) }
            let expected = Set([poster(index)] + followers.prefix(count))
            // Counted, not listed: a failure with thousands of uids would bury the one that matters.
            #expect(
                reached.count == expected.count && expected.subtracting(reached).isEmpty,
                "\(count) followers: \(reached.count) entries, \(expected.subtracting(reached).count) missing")
            #expect(try rows.allSatisfy { try $0.decode(String.self, at: 1) == poster(index) })
        }
    }

    @Test func renamingWithoutPropagatingLeavesThePosterCopiesAsTheAppDid() throws {
        let store = try consistentStore()
        #expect(try store.renameUser(uid: "bob", to: "robert", propagate: false) == 0)
        let poster = try store.check([.poster])[0]
        #expect(poster.examples == ["/posts/bob/-Pb1", "/posts/bob/-Pb2"])
    }

    @Test func readsPageByKey() throws {
        let store = try consistentStore()
        let first = try store.timeline(of: "carol", limit: 2)
        #expect(first.map(\.post.key) == ["-Pb2", "-Pb1"])
        #expect(first.map(\.isLiked) == [false, true])
        #expect(first[1].post.likeCount == 2 && first[1].post.posterUsername == "bob")
        let second = try store.timeline(of: "carol", limit: 2, before: first.last!.post.key)
        #expect(second.map(\.post.key) == ["-Pa1"])
        #expect(try store.posts(of: "bob", limit: 1, before: "-Pb2").map(\.key) == ["-Pb1"])
        #expect(try store.users(limit: 2, after: "alice").map(\.uid) == ["bob", "carol"])
        let carol = try #require(try store.user("carol"))
        #expect((carol.posts, carol.followers, carol.following, carol.timelineEntries) == (0, 0, 2, 3))
        #expect(try store.user("nobody") == nil)
    }

    /// A page is the reader's next entries; those without a post to show (no poster, or a post that is gone)
    /// take their place in it and are left out, and a post of the same key under another owner is not theirs.
    @Test func aTimelinePageLeavesOutEntriesWithoutAPost() throws {
        let tree =
            consistentTree
            .setting("timeline/carol/-Pz0", #"{"seen": true}"#)
            .setting("timeline/carol/-Pz9", #"{"poster_uid": "bob"}"#)
            .setting("posts/alice/-Pb1", #"{"image_url": "https://i/x.jpg", "poster": {"uid": "alice"}}"#)
        let store = try consistentStore(tree)
        let first = try store.timeline(of: "carol", limit: 3)
        #expect(first.map(\.post.key) == ["-Pb2"])
        let second = try store.timeline(of: "carol", limit: 3, before: "-Pb2")
        #expect(
            second.map { "\($0.post.ownerUID)/\($0.post.key) \($0.isLiked)" } == ["bob/-Pb1 true", "alice/-Pa1 false"])
        #expect(try store.timeline(of: "carol", limit: 3, before: "-Pa1").isEmpty)
    }

    @Test func appCodaFeedPagesNewestFirst() throws {
        let store = try makeStore()
        try importJSON(
            """
            {"posts": {
              "-F1": {"imageFileURL": "https://i/1.jpg", "user": "Ann", "votes": 3, "timestamp": 1000},
              "-F2": {"imageFileURL": "https://i/2.jpg", "user": "Ben", "votes": 0, "timestamp": 2000},
              "-F3": {"imageFileURL": "https://i/3.jpg", "user": "Cy", "votes": 1, "timestamp": 2000},
              "-F4": {"imageFileURL": "https://i/4.jpg", "user": "Di", "votes": 9, "timestamp": 3000}}}
            """, into: store)
        #expect(try store.feed(.recent, limit: 2).map(\.id) == ["-F4", "-F3"])
        #expect(try store.feed(.older(than: 2000, id: "-F3"), limit: 2).map(\.id) == ["-F2", "-F1"])
        #expect(try store.feed(.older(than: 2000), limit: 5).map(\.id) == ["-F1"])
        #expect(try store.feed(.newer(than: 1000), limit: 5).map(\.id) == ["-F4", "-F3", "-F2"])
        let top = try store.feed(.recent, limit: 1)[0]
        #expect(top == FeedPost(id: "-F4", imageFileURL: "https://i/4.jpg", user: "Di", votes: 9, timestamp: 3000))
    }

    @Test func refusalsWriteNothing() throws {
        let store = try consistentStore()
        let before = try exportJSON(store)
        func expectError(_ kind: StorageError.Kind, _ body: () throws -> Any) {
            #expect { _ = try body() } throws: { ($0 as? StorageError)?.kind == kind }
        }
        expectError(.refused) { try store.follow("alice", "alice") }
        expectError(.notFound) { try store.follow("alice", "nobody") }
        expectError(.notFound) { try store.like("nobody", post: "-Pb1") }
        expectError(.notFound) { try store.like("alice", post: "-Nope") }
        expectError(.notFound) { try store.createPost(owner: "nobody", imageURL: "u", imageHeight: 1) }
        expectError(.notFound) { try store.deletePost(owner: "bob", key: "-Pa1") }
        expectError(.notFound) { try store.renameUser(uid: "nobody", to: "x", propagate: true) }
        expectError(.refused) { try store.addUser(uid: "alice", username: "again") }
        expectError(.refused) { try store.addUser(uid: "a/b", username: "slash") }
        expectError(.notFound) { try store.timeline(of: "nobody", limit: 5) }
        expectSameText(try exportJSON(store), before)
    }

    @Test func concurrentClientsLeaveEveryCopyRight() throws {
        let database = try TestPostgres.makeDatabase()
        try importJSON(consistentTree.json, into: Store(connection: try database.connect()))
        let uids = ["alice", "bob", "carol"]
        let failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 4) { client in
            do {
                let store = Store(connection: try database.connect())
                var generator = SeededGenerator(state: UInt64(client + 1))
                var myPosts: [String] = []
                for _ in 0..<60 {
                    let a = uids.randomElement(using: &generator)!
                    let b = uids.filter { $0 != a }.randomElement(using: &generator)!
                    let keys = ["-Pa1", "-Pb1", "-Pb2"] + myPosts
                    let key = keys.randomElement(using: &generator)!
                    do {
                        switch Int.random(in: 0..<9, using: &generator) {
                        case 0, 1: _ = try store.like(a, post: key)
                        case 2: _ = try store.unlike(a, post: key)
                        case 3: _ = try store.follow(a, b)
                        case 4: _ = try store.unfollow(a, b)
                        case 5: myPosts.append(try store.createPost(owner: a, imageURL: "u", imageHeight: 1).post.key)
                        case 6, 7: _ = try store.sendMessage(from: a, to: b, text: "from client \(client)")
                        default:
                            if let mine = myPosts.popLast() {
                                let owner = try store.connection.query(
                                    "SELECT owner_uid FROM posts WHERE post_key = \(mine)")[0].decode(
                                        String.self, at: 0)
                                _ = try store.deletePost(owner: owner, key: mine)
                            }
                        }
                    } catch let error as StorageError where error.kind == .notFound || error.kind == .refused {
                        // A post another client deleted in the meantime; a message to a user not followed.
                    }
                }
            } catch {
                failures.withLock { $0.append("client \(client): \(error)") }
            }
        }
        #expect(failures.withLock { $0 } == [])
        try expectCheckClean(Store(connection: try database.connect()))
    }

    /// Runs `first` in a transaction on one connection and, while it is still open, `second` on another, which
    /// must wait for the first's row lock; then commits the first and lets the second finish, without error.
    private func interleave(
        in database: TestDatabase, _ first: @escaping (Store) throws -> Void,
        _ second: @escaping @Sendable (Store) throws -> Void
    ) throws {
        #expect(try whileHolding(database, first, then: second) == nil)
    }

    @Test func aFollowAndAPostOfTheFolloweeAtOnceMissNothing() throws {
        let database = try TestPostgres.makeDatabase()
        let setup = Store(connection: try database.connect())
        try importJSON(consistentTree.json, into: setup)
        _ = try setup.addUser(uid: "dave", username: "dave")
        _ = try setup.addUser(uid: "erin", username: "erin")
        // Follow first, post meanwhile: the post's fan-out must see the new follower.
        try interleave(
            in: database, { _ = try $0.follow("dave", "bob") },
            {
                _ = try $0.createPost(owner: "bob", imageURL: "u", imageHeight: 1)
            })
        // Post first, follow meanwhile: the follow must see the new post.
        try interleave(
            in: database, { _ = try $0.createPost(owner: "bob", imageURL: "u", imageHeight: 1) },
            {
                _ = try $0.follow("erin", "bob")
            })
        // Delete first, follow meanwhile: the follow must not bring back an entry of the deleted post.
        try interleave(
            in: database, { _ = try $0.deletePost(owner: "bob", key: "-Pb1") },
            {
                _ = try $0.unfollow("dave", "bob")
                _ = try $0.follow("dave", "bob")
            })
        let entries = try setup.connection.query(
            "SELECT uid, count(*) FROM timeline WHERE poster_uid = 'bob' GROUP BY uid ORDER BY uid")
        #expect(
            try entries.map { "\(try $0.decode(String.self, at: 0)) \(try $0.decode(Int.self, at: 1))" }
                == ["alice 3", "bob 3", "carol 3", "dave 3", "erin 3"])
        try expectCheckClean(setup)
    }

    @Test func aFollowAndAnUnfollowOfOnePairAtOnceRunOneAfterTheOther() throws {
        let database = try TestPostgres.makeDatabase()
        let setup = Store(connection: try database.connect())
        try importJSON(consistentTree.json, into: setup)
        _ = try setup.addUser(uid: "dave", username: "dave")
        // Follow first, unfollow meanwhile: the unfollow must wait and then remove the follow and all its entries.
        try interleave(in: database, { _ = try $0.follow("dave", "bob") }, { _ = try $0.unfollow("dave", "bob") })
        #expect(try setup.connection.query("SELECT FROM timeline WHERE uid = 'dave' AND poster_uid = 'bob'").isEmpty)
        // Unfollow first, follow meanwhile: the follow must wait and then copy every post.
        _ = try setup.follow("dave", "bob")
        try interleave(in: database, { _ = try $0.unfollow("dave", "bob") }, { _ = try $0.follow("dave", "bob") })
        #expect(try setup.connection.query("SELECT FROM timeline WHERE uid = 'dave' AND poster_uid = 'bob'").count == 2)
        // Each way round at once: the second waits instead of deadlocking.
        try interleave(in: database, { _ = try $0.follow("bob", "dave") }, { _ = try $0.follow("dave", "bob") })
        try interleave(in: database, { _ = try $0.follow("dave", "carol") }, { _ = try $0.follow("carol", "dave") })
        try expectCheckClean(setup)
    }

    @Test func concurrentLikesOfOnePostCountExactly() throws {
        let database = try TestPostgres.makeDatabase()
        let setup = Store(connection: try database.connect())
        try importJSON(consistentTree.json, into: setup)
        for client in 0..<4 {
            for index in 0..<10 { _ = try setup.addUser(uid: "fan\(client)_\(index)", username: "fan") }
        }
        let failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 4) { client in
            do {
                let store = Store(connection: try database.connect())
                var generator = SeededGenerator(state: UInt64(client) &+ 99)
                for _ in 0..<150 {
                    // Fans of other clients too, so that two clients like and unlike as the same user at once.
                    let fan =
                        "fan\(Int.random(in: 0..<4, using: &generator))_\(Int.random(in: 0..<10, using: &generator))"
                    if Bool.random(using: &generator) {
                        _ = try store.like(fan, post: "-Pb1")
                    } else {
                        _ = try store.unlike(fan, post: "-Pb1")
                    }
                }
            } catch {
                failures.withLock { $0.append("client \(client): \(error)") }
            }
        }
        #expect(failures.withLock { $0 } == [])
        let row = try setup.connection.query(
            """
            SELECT (SELECT like_count FROM posts WHERE post_key = '-Pb1'),
                (SELECT count(*) FROM post_likes WHERE post_key = '-Pb1')
            """)[0]
        #expect(try row.decode(Int.self, at: 0) == row.decode(Int.self, at: 1))
    }

    @Test(arguments: 1...4)
    func randomSequencesOfOperationsLeaveCheckClean(seed: Int) throws {
        let store = try consistentStore()
        var generator = SeededGenerator(state: UInt64(seed) * 7919)
        var uids = ["alice", "bob", "carol"]
        var posts: [(owner: String, key: String)] = [("alice", "-Pa1"), ("bob", "-Pb1"), ("bob", "-Pb2")]
        let pushIDs = PushIDGenerator()
        for step in 0..<150 {
            let a = uids.randomElement(using: &generator)!
            let b = uids.randomElement(using: &generator)!
            do {
                switch Int.random(in: 0..<11, using: &generator) {
                case 0: uids.append(try store.addUser(uid: "user\(step)", username: "name \(step)").uid)
                case 9, 10: _ = try store.sendMessage(from: a, to: b, text: "step \(step)", pushIDs: pushIDs)
                case 1, 2: _ = try store.follow(a, b)
                case 3: _ = try store.unfollow(a, b)
                case 4:
                    posts.append(
                        (a, try store.createPost(owner: a, imageURL: "u", imageHeight: 1, pushIDs: pushIDs).post.key))
                case 5, 6:
                    if let post = posts.randomElement(using: &generator) { _ = try store.like(a, post: post.key) }
                case 7: if let post = posts.randomElement(using: &generator) { _ = try store.unlike(a, post: post.key) }
                default:
                    if !posts.isEmpty {
                        let post = posts.remove(at: Int.random(in: 0..<posts.count, using: &generator))
                        _ = try store.deletePost(owner: post.owner, key: post.key)
                    }
                }
            } catch let error as StorageError where error.kind == .refused {
                // Following or messaging oneself, a message to a user not followed.
            }
        }
        try expectCheckClean(store)
    }
}
