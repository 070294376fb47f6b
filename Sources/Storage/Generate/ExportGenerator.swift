import FirebaseTree
import Foundation

/// What `generate` writes.
public struct GeneratorOptions: Sendable {
    /// Which app's tree to write.
    public enum Dialect: String, CaseIterable, Sendable {
        /// Makestagram: users, posts under owners, likes, follows both ways, timelines, chats and messages.
        case makestagram
        /// AppCoda's flat feed: `posts/{id}: {imageFileURL, timestamp (ms), user, votes}`.
        case appcoda
    }

    /// How many users the tree has; everything else scales with it.
    public var users: Int
    /// The same seed always gives the same bytes.
    public var seed: UInt64
    /// The app's tree shape.
    public var dialect: Dialect
    /// Plant a known number of violations of each check (Makestagram only).
    public var plantsAnomalies: Bool
    /// Layout of the JSON; the default is `export`'s, so `export` of an imported generated file gives it back.
    public var output: JSONTextWriter.Options

    /// Options for `users` users.
    public init(
        users: Int, seed: UInt64 = 1, dialect: Dialect = .makestagram, plantsAnomalies: Bool = false,
        output: JSONTextWriter.Options = JSONTextWriter.Options()
    ) {
        self.users = users
        self.seed = seed
        self.dialect = dialect
        self.plantsAnomalies = plantsAnomalies
        self.output = output
    }

    /// The most users a tree can have (uids keep their order with the users' numbers up to here).
    public static let maximumUsers = GeneratedWorld.maximumUsers
}

/// What `generate` wrote.
public struct GeneratorReport: Sendable {
    /// Rows written under one top-level node.
    public struct Node: Sendable, Equatable {
        /// The top-level key.
        public var name: String
        /// Leaf records under it (users, posts, likes, edges, timeline entries, chat copies, messages).
        public var rows: Int
    }

    /// The nodes in the order written.
    public var nodes: [Node] = []
    /// JSON bytes written.
    public var bytes = 0
    /// Seconds from start to the last byte.
    public var seconds: Double = 0
    /// What `check` must find, check by check (all zero but `chat_hash_legacy` without anomalies), with the
    /// first 100 paths of each in byte order.
    public var violations: [CheckResult] = []
}

/// Writes realistic Firebase exports of any size, streaming: memory does not grow with the output.
///
/// ```swift
/// let report = try ExportGenerator.write(GeneratorOptions(users: 1_000, seed: 7)) { bytes in
///     try file.write(bytes)
/// }
/// ```
public enum ExportGenerator {
    /// Paths kept per check for the manifest.
    static let exampleLimit = 100

    /// About how many bytes `write(options)` writes: a sample of the same tree at a tenth of the users (at most
    /// 2,000) is generated and scaled, which takes a few milliseconds and lands within a few percent (a
    /// progress bar's total).
    public static func estimatedBytes(_ options: GeneratorOptions) throws -> Int {
        var sample = options
        sample.users = max(1, min(options.users, 2_000, max(200, options.users / 10)))
        let bytes = try write(sample) { _ in }.bytes
        return Int(Double(bytes) * Double(options.users) / Double(sample.users))
    }

    /// Writes the tree `options` describe to `sink`; `onProgress` gets the bytes written so far.
    public static func write(
        _ options: GeneratorOptions, onProgress: ((Int) -> Void)? = nil,
        to sink: (UnsafeBufferPointer<UInt8>) throws -> Void
    ) throws -> GeneratorReport {
        precondition((1...GeneratorOptions.maximumUsers).contains(options.users))
        let started = ContinuousClock.now
        return try withoutActuallyEscaping(sink) { sink in
            var tree = GeneratedTree(
                world: GeneratedWorld(
                    users: options.users, seed: options.seed,
                    plantsAnomalies: options.plantsAnomalies && options.dialect == .makestagram),
                writer: TreeWriter(json: JSONTextWriter(options: options.output), sink: sink, onProgress: onProgress))
            switch options.dialect {
            case .makestagram: try tree.writeMakestagram()
            case .appcoda: try tree.writeAppCoda()
            }
            try tree.writer.finish()
            var report = GeneratorReport()
            report.nodes = tree.nodes
            report.bytes = tree.writer.bytesWritten
            report.seconds = (ContinuousClock.now - started).seconds
            report.violations = tree.planted.results
            return report
        }
    }
}

/// JSON output in which objects are opened only when their first child arrives, so that no empty object (which
/// Firebase cannot hold) is ever written.
struct TreeWriter {
    var json: JSONTextWriter
    let sink: (UnsafeBufferPointer<UInt8>) throws -> Void
    let onProgress: ((Int) -> Void)?
    private(set) var bytesWritten = 0
    /// Objects entered but not opened yet, innermost last; nil is the document itself.
    private var pending: [String?] = [nil]

    init(
        json: JSONTextWriter, sink: @escaping (UnsafeBufferPointer<UInt8>) throws -> Void, onProgress: ((Int) -> Void)?
    ) {
        self.json = json
        self.sink = sink
        self.onProgress = onProgress
    }

    /// Enters the child object `key`; it is written only if something is written into it.
    mutating func enter(_ key: String) { pending.append(key) }

    /// Leaves the innermost object.
    mutating func leave() throws {
        if pending.isEmpty { json.endObject() } else { pending.removeLast() }
        if json.bytes.count >= 1 << 16 { try drain() }
    }

    /// Starts the child `key`, whose value is written next.
    mutating func field(_ key: String) {
        for name in pending {
            if let name { json.key(name) }
            json.beginObject()
        }
        pending.removeAll()
        json.key(key)
    }

    mutating func string(_ key: String, _ value: String) {
        field(key)
        json.string(value)
    }

    mutating func number(_ key: String, _ value: Double) {
        field(key)
        json.number(value)
    }

    mutating func `true`(_ key: String) {
        field(key)
        json.bool(true)
    }

    /// Closes the document (`null` when nothing was written, as Firebase reads an empty database) and flushes.
    mutating func finish() throws {
        if pending.isEmpty {
            json.endObject()
        } else {
            json.null()
        }
        json.finish()
        try drain()
    }

    private mutating func drain() throws {
        var written = 0
        try json.drain { bytes in
            written = bytes.count
            try sink(bytes)
        }
        bytesWritten += written
        onProgress?(bytesWritten)
    }
}

/// The nodes of one generated tree, written in RTDB key order.
struct GeneratedTree {
    let world: GeneratedWorld
    var writer: TreeWriter
    private(set) var nodes: [GeneratorReport.Node] = []
    private(set) var planted = PlantedViolations()

    init(world: GeneratedWorld, writer: TreeWriter) {
        self.world = world
        self.writer = writer
    }

    private var users: Range<Int> { 0..<world.users }

    mutating func writeMakestagram() throws {
        try node("chats") { try $0.writeChats() }
        try node("followers") { try $0.writeFollowers() }
        try node("following") { try $0.writeFollowing() }
        try node("messages") { try $0.writeMessages() }
        try node("postLikes") { try $0.writePostLikes() }
        try node("posts") { try $0.writePosts() }
        try node("timeline") { try $0.writeTimelines() }
        try node("users") { tree in
            for user in tree.users {
                tree.writer.enter(tree.world.uid(user))
                tree.writer.string("username", tree.world.username(user))
                try tree.writer.leave()
            }
            return tree.world.users
        }
    }

    mutating func writeAppCoda() throws {
        try node("posts") { tree in
            var rows = 0
            try tree.forEachPostSlot { tree, slot, isDeleted in
                guard !isDeleted else { return }
                let world = tree.world
                tree.writer.enter(world.postKey(slot))
                tree.writer.string("imageFileURL", world.imageURL(slot, bucket: "instafeed-9c31e", folder: "photos"))
                tree.writer.number("timestamp", Double(world.postMilliseconds(slot)))
                tree.writer.string("user", world.username(slot.owner))
                tree.writer.number("votes", Double(world.votes(slot)))
                try tree.writer.leave()
                rows += 1
            }
            return rows
        }
    }

    /// Writes the top-level node `name` with `body`, which returns how many rows it wrote.
    private mutating func node(_ name: String, _ body: (inout GeneratedTree) throws -> Int) throws {
        writer.enter(name)
        let rows = try body(&self)
        try writer.leave()
        nodes.append(GeneratorReport.Node(name: name, rows: rows))
    }

    /// Calls `body` with every post slot in key order: the posts, and the posts deleted under `--anomalies`.
    private mutating func forEachPostSlot(_ body: (inout GeneratedTree, GeneratedWorld.PostSlot, Bool) throws -> Void)
        throws
    {
        for band in 0..<GeneratedWorld.postBands {
            for owner in users {
                if let isDeleted = world.post(of: owner, inBand: band) {
                    try body(&self, GeneratedWorld.PostSlot(band: band, owner: owner), isDeleted)
                }
            }
        }
    }

    // MARK: Chats and messages

    private mutating func writeChats() throws -> Int {
        var rows = 0
        for user in users {
            let slots = world.chats(of: user)
            guard !slots.isEmpty else { continue }
            writer.enter(world.uid(user))
            for slot in slots {
                try writeChatCopy(slot, heldBy: user)
                rows += 1
            }
            try writer.leave()
        }
        return rows
    }

    /// One member's copy of a chat; the partner's copy carries the copy-level anomalies.
    private mutating func writeChatCopy(_ slot: GeneratedWorld.ChatSlot, heldBy holder: Int) throws {
        let (a, b) = (slot.a, world.partner(slot))
        let key = world.chatKey(slot)
        let chatPath = "/chats/\(world.uid(min(a, b)))/\(key)"
        let messages = world.messages(slot)
        var last = messages[messages.count - 1]
        if world.plants(.chatLastMessage, in: slot) {
            if messages.count >= 2 { last = messages[messages.count - 2] } else { last.timestamp -= 60 }
            if holder == min(a, b) { planted.record(.chatLastMessage, chatPath) }
        }
        let isPartnersCopy = holder == b
        writer.enter(key)
        writer.string("lastMessage", "\(world.username(last.sender)): \(last.content)")
        writer.number("lastMessageSent", last.timestamp)
        let hashDiffers = isPartnersCopy && world.plants(.chatMemberHash, in: slot)
        writer.string("memberHash", world.legacyMemberHash(slot, copy: hashDiffers ? 1 : 0))
        writer.enter("members")
        writer.true(world.uid(min(a, b)))
        writer.true(world.uid(max(a, b)))
        try writer.leave()
        let titleDiffers = isPartnersCopy && world.plants(.chatCopies, in: slot)
        writer.string("title", "\(titleDiffers ? world.formerUsername(a) : world.username(a)), \(world.username(b))")
        try writer.leave()
        if hashDiffers { planted.record(.chatMemberHash, chatPath) }
        if titleDiffers { planted.record(.chatCopies, chatPath) }
        if holder == min(a, b) {
            // Every chat the app made carries a per-launch hash, never the stable one.
            planted.record(.chatHashLegacy, chatPath)
            if slot.isDuplicate { planted.record(.chatDuplicates, chatPath) }
        }
    }

    private mutating func writeMessages() throws -> Int {
        var rows = 0
        for round in 0..<4 {
            let slotPair = round % 2
            guard slotPair < world.chatOffsets.count else { continue }
            for a in users {
                let slot = GeneratedWorld.ChatSlot(pair: slotPair, a: a, isDuplicate: round >= 2)
                guard world.chatExists(slot) else { continue }
                let chatKey = world.chatKey(slot)
                let isOrphan = world.copiesDeleted(slot)
                writer.enter(chatKey)
                for message in world.messages(slot) {
                    writer.enter(message.key)
                    writer.string("content", message.content)
                    writer.enter("sender")
                    writer.string("uid", world.uid(message.sender))
                    writer.string("username", world.username(message.sender))
                    try writer.leave()
                    writer.number("timestamp", message.timestamp)
                    try writer.leave()
                    if isOrphan { planted.record(.orphans, "/messages/\(chatKey)/\(message.key)") }
                    rows += 1
                }
                try writer.leave()
            }
        }
        return rows
    }

    // MARK: Follows

    private mutating func writeFollowers() throws -> Int {
        var rows = 0
        let world = self.world
        for followee in users {
            writer.enter(world.uid(followee))
            world.forEachFollower(of: followee) { follower in
                if world.plants(.followAsymmetric, follower), world.followees(of: follower).first == followee {
                    planted.record(.followAsymmetric, "/following/\(world.uid(follower))/\(world.uid(followee))")
                } else {
                    writer.true(world.uid(follower))
                    rows += 1
                }
            }
            try writer.leave()
        }
        return rows
    }

    private mutating func writeFollowing() throws -> Int {
        var rows = 0
        for follower in users {
            writer.enter(world.uid(follower))
            for followee in world.followees(of: follower) {
                writer.true(world.uid(followee))
                rows += 1
            }
            try writer.leave()
        }
        return rows
    }

    // MARK: Posts, likes, timelines

    private mutating func writePostLikes() throws -> Int {
        var rows = 0
        try forEachPostSlot { tree, slot, isDeleted in
            let key = tree.world.postKey(slot)
            tree.writer.enter(key)
            for liker in tree.world.likers(slot) {
                let uid = tree.world.uid(liker)
                tree.writer.true(uid)
                if isDeleted { tree.planted.record(.orphans, "/postLikes/\(key)/\(uid)") }
                rows += 1
            }
            try tree.writer.leave()
        }
        return rows
    }

    private mutating func writePosts() throws -> Int {
        var rows = 0
        for owner in users {
            let posts = world.posts(of: owner)
            guard !posts.isEmpty else { continue }
            let uid = world.uid(owner)
            writer.enter(uid)
            for slot in posts {
                let isFirst = slot == posts[0]
                let key = world.postKey(slot)
                let path = "/posts/\(uid)/\(key)"
                writer.enter(key)
                writer.number("created_at", world.postCreatedAt(slot))
                writer.number("image_height", world.imageHeight(slot))
                writer.string(
                    "image_url", world.imageURL(slot, bucket: "makestagram-4f2a1", folder: "images%2Fposts%2F\(uid)"))
                var likes = world.likers(slot).count
                if isFirst, world.plants(.likeCount, owner) {
                    likes += 1
                    planted.record(.likeCount, path)
                }
                writer.number("like_count", Double(likes))
                let posterIsStale = isFirst && world.plants(.poster, owner)
                // A stale poster is either a copy from before a rename or missing, as on posts older than likes.
                if !posterIsStale || world.dice.bits(.anomaly, owner) % 2 == 0 {
                    writer.enter("poster")
                    writer.string("uid", uid)
                    writer.string("username", posterIsStale ? world.formerUsername(owner) : world.username(owner))
                    try writer.leave()
                }
                if posterIsStale { planted.record(.poster, path) }
                try writer.leave()
                rows += 1
            }
            try writer.leave()
        }
        return rows
    }

    private mutating func writeTimelines() throws -> Int {
        var rows = 0
        for user in users {
            var entries: [GeneratedWorld.PostSlot] = []
            for owner in [user] + world.followees(of: user) {
                entries += world.posts(of: owner)
            }
            let deleted = world.deletedPost(of: user)
            let extra = world.plants(.timelineExtra, user) ? strangersPost(for: user) : nil
            let missing = world.plants(.timelineMissing, user) ? entries.min() : nil
            entries += [deleted, extra].compactMap { $0 }
            entries.sort()
            let uid = world.uid(user)
            writer.enter(uid)
            for entry in entries {
                let key = world.postKey(entry)
                let path = "/timeline/\(uid)/\(key)"
                if entry == missing {
                    planted.record(.timelineMissing, path)
                    continue
                }
                if entry == deleted { planted.record(.orphans, path) }
                if entry == extra { planted.record(.timelineExtra, path) }
                writer.enter(key)
                writer.string("poster_uid", world.uid(entry.owner))
                try writer.leave()
                rows += 1
            }
            try writer.leave()
        }
        return rows
    }

    /// The first post of someone `user` does not follow, if one is found quickly.
    private func strangersPost(for user: Int) -> GeneratedWorld.PostSlot? {
        guard world.users > 2 else { return nil }
        for attempt in 0..<20 {
            let owner =
                (user + 1 + Int(world.dice.bits(.anomaly, user, attempt) % UInt64(world.users - 1))) % world.users
            if owner != user, !world.follows(user, owner), let post = world.posts(of: owner).first {
                return post
            }
        }
        return nil
    }
}

/// The violations a generated tree holds, counted per check, with the first paths in byte order.
struct PlantedViolations {
    private var counts: [IntegrityCheck: Int] = [:]
    private var examples: [IntegrityCheck: [[UInt8]]] = [:]

    mutating func record(_ check: IntegrityCheck, _ path: String) {
        counts[check, default: 0] += 1
        let bytes = Array(path.utf8)
        var kept = examples[check, default: []]
        // Binary search for the insertion point; only the first `exampleLimit` are kept.
        var (low, high) = (0, kept.count)
        while low < high {
            let middle = (low + high) / 2
            if kept[middle].lexicographicallyPrecedes(bytes) { low = middle + 1 } else { high = middle }
        }
        guard low < ExportGenerator.exampleLimit else { return }
        kept.insert(bytes, at: low)
        if kept.count > ExportGenerator.exampleLimit { kept.removeLast() }
        examples[check] = kept
    }

    /// Every check, in the order `check` runs them.
    var results: [CheckResult] {
        IntegrityCheck.allCases.map { check in
            CheckResult(
                check: check, violations: counts[check] ?? 0,
                examples: (examples[check] ?? []).map { String(decoding: $0, as: UTF8.self) })
        }
    }
}
