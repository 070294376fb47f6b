/// The users, follows, posts, likes and chats of a generated export, as pure functions of the seed.
///
/// Nothing is stored per user: every fact (who follows whom, a post's likers, a chat's messages) is recomputed from
/// the seed wherever a node of the tree needs it, so the generator's memory does not grow with the export. Users
/// are numbered so that index order is uid order, and posts and chats get creation times in a global slot order,
/// so every node can be written in RTDB key order without sorting.
struct GeneratedWorld {
    /// Where a choice's random bits come from, so that unrelated choices never share them. The raw values are
    /// part of "same seed, same bytes": add new streams at the end.
    enum Stream: UInt64 {
        case uid = 1, name, nameStyle, activity, postCount, postPhase, postJitter, postMicros, postRandom, image, likes
        case liker, celebrity, offset, follow, celebrityFollow, chat, chatJitter, chatRandom, legacyHash
        case messageCount, messageGap, messageRandom, messageMicros, sender, content, votes, token
        case anomaly = 100
    }

    /// The violations `--anomalies` plants, one kind per check (orphans has two).
    enum Anomaly: UInt64, CaseIterable {
        case likeCount, poster, timelineMissing, timelineExtra, followAsymmetric, chatCopies, chatMemberHash
        case chatDuplicate, chatLastMessage, deletedPost, deletedChat
    }

    let users: Int
    let seed: UInt64
    let plantsAnomalies: Bool

    /// The most posts a user has; one more slot holds a post deleted under `--anomalies`.
    static let maximumPosts = 40
    /// History is cut into this many bands of time; a user posts at most once per band, and the bands of
    /// a user's posts are spread over the whole history.
    static let postBands = maximumPosts + 1
    /// 2017-01-01T00:00:00Z, where the generated history starts.
    static let epochMilliseconds = 1_483_228_800_000
    /// About two years of history, stretched when there are more slots than milliseconds.
    static let historyMilliseconds = 63_072_000_000

    /// How far apart consecutive post slots are in time (at least 2 ms, so that keys never share a millisecond).
    let postSpacing: Int
    /// How far apart consecutive chat slots are in time.
    let chatSpacing: Int
    /// Ordinary follows go from `a` to `a + offsets[k]` (mod users), so followers are found by subtracting.
    let offsets: [Int]
    private let offsetIndex: [Int: Int]
    /// Indices of the few users most others follow (the long tail), by rank.
    let celebrities: [Int]
    private let celebrityRank: [Int: Int]
    /// Indices into `offsets` of the follows that may carry a chat; chosen so that no pair can get two chats.
    let chatOffsets: [Int]
    /// The chance that a user or chat carries a given anomaly: about 200 of each whatever the size.
    let anomalyChance: Double
    /// How many leading uid characters keep uids in index order, and the values they span (62^length).
    private let uidPrefixLength: Int
    private let uidPrefixRange: Int

    init(users: Int, seed: UInt64, plantsAnomalies: Bool) {
        precondition(users >= 1)
        self.users = users
        self.seed = seed
        self.plantsAnomalies = plantsAnomalies
        postSpacing = max(2, Self.historyMilliseconds / (Self.postBands * users))
        chatSpacing = max(2, Self.historyMilliseconds / (4 * users))
        let dice = Dice(seed: seed)

        var offsets: [Int] = []
        var attempt = 0
        while offsets.count < min(12, users - 1), attempt < 1000 {
            let offset = 1 + Int(dice.bits(.offset, attempt) % UInt64(users - 1))
            if !offsets.contains(offset) { offsets.append(offset) }
            attempt += 1
        }
        self.offsets = offsets
        offsetIndex = Dictionary(uniqueKeysWithValues: offsets.enumerated().map { ($1, $0) })

        var celebrities: [Int] = []
        attempt = 0
        while celebrities.count < min(10, users / 30), attempt < 1000 {
            let index = Int(dice.bits(.celebrity, attempt) % UInt64(users))
            if !celebrities.contains(index) { celebrities.append(index) }
            attempt += 1
        }
        self.celebrities = celebrities
        celebrityRank = Dictionary(uniqueKeysWithValues: celebrities.enumerated().map { ($1, $0) })

        // (a, a+e) and (c, c+e') are the same pair only when e' = ±e or 2e = 0 (mod users).
        var chatOffsets: [Int] = []
        for (index, offset) in offsets.enumerated() where chatOffsets.count < 2 {
            let clashes =
                (2 * offset) % users == 0
                || chatOffsets.contains { offset == offsets[$0] || (offset + offsets[$0]) % users == 0 }
            if !clashes { chatOffsets.append(index) }
        }
        self.chatOffsets = chatOffsets
        anomalyChance = min(0.05, 200 / Double(users))
        var (length, range) = (1, 62)
        while range < users {
            (length, range) = (length + 1, range * 62)
        }
        (uidPrefixLength, uidPrefixRange) = (length, range)
    }

    var dice: Dice { Dice(seed: seed) }

    // MARK: Users

    private static let base62 = Array("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz".utf8)
    private static let firstNames = [
        "ana", "bjørn", "chloé", "dmitri", "eun-ji", "fátima", "giorgos", "hana", "ivan", "jürgen", "kofi", "lucía",
        "mehmet", "nadia", "oğuz", "priya", "quentin", "renée", "søren", "tomás", "ulla", "václav", "wei", "xóchitl",
        "yusuf", "zoë", "日本太郎", "김민준", "Αλέξανδρος", "Мария", "محمد", "אביגיל",
    ]
    /// The most users: up to 62^5, a five-character prefix keeps index order and uid order the same.
    static let maximumUsers = 916_132_832

    /// A 28-character uid like Firebase Auth's; uids increase with the index. The first characters spread the
    /// indices evenly over the base-62 range (as few as the number of users needs), the rest are random.
    func uid(_ user: Int) -> String {
        var characters = [UInt8](repeating: 0, count: 28)
        var prefix = user * uidPrefixRange / users
        for position in stride(from: uidPrefixLength - 1, through: 0, by: -1) {
            characters[position] = Self.base62[prefix % 62]
            prefix /= 62
        }
        // Ten base-62 digits use 60 of the 64 bits.
        var bits: UInt64 = 0
        for position in uidPrefixLength..<28 {
            if (position - uidPrefixLength) % 10 == 0 { bits = dice.bits(.uid, user, position) }
            characters[position] = Self.base62[Int(bits % 62)]
            bits /= 62
        }
        return String(decoding: characters, as: UTF8.self)
    }

    /// The user's name: a first name in one of many scripts, made unique by the index.
    func username(_ user: Int) -> String {
        let name = Self.firstNames[Int(dice.bits(.name, user) % UInt64(Self.firstNames.count))]
        return name + ["", "_", "."][Int(dice.bits(.nameStyle, user) % 3)] + String(user)
    }

    /// A name the user had before renaming, as a stale copy would still show it.
    func formerUsername(_ user: Int) -> String {
        let name = Self.firstNames[Int((dice.bits(.name, user) + 1) % UInt64(Self.firstNames.count))]
        return name + String(user)
    }

    /// How active a user is, in [0, 1): drives posts and follows.
    func activity(_ user: Int) -> Double { dice.unit(.activity, user) }

    // MARK: Follows

    /// Whether `a` follows `b`.
    func follows(_ a: Int, _ b: Int) -> Bool {
        guard a != b else { return false }
        if let k = offsetIndex[(b - a + users) % users], followsByOffset(a, k) { return true }
        if let rank = celebrityRank[b], followsCelebrity(a, rank) { return true }
        return false
    }

    /// Whether `a` follows `a + offsets[k]`.
    func followsByOffset(_ a: Int, _ k: Int) -> Bool {
        dice.unit(.follow, a, k) < 0.1 + 0.7 * activity(a)
    }

    private func followsCelebrity(_ a: Int, _ rank: Int) -> Bool {
        a != celebrities[rank] && dice.unit(.celebrityFollow, a, rank) < 0.6 / Double(rank + 1)
    }

    /// Whom `a` follows, in uid order.
    func followees(of a: Int) -> [Int] {
        var candidates = Set(offsets.map { (a + $0) % users })
        candidates.formUnion(celebrities)
        return candidates.filter { follows(a, $0) }.sorted()
    }

    /// Calls `body` with each follower of `b` in uid order; a celebrity's followers are found by a scan.
    func forEachFollower(of b: Int, _ body: (Int) throws -> Void) rethrows {
        if celebrityRank[b] != nil {
            for a in 0..<users where follows(a, b) { try body(a) }
        } else {
            for a in Set(offsets.map { (b - $0 + users) % users }).sorted() where follows(a, b) { try body(a) }
        }
    }

    // MARK: Posts

    /// A post: `owner`'s post in time band `band`. Keys sort by (band, owner).
    struct PostSlot: Comparable {
        var band: Int
        var owner: Int
        static func < (left: PostSlot, right: PostSlot) -> Bool {
            (left.band, left.owner) < (right.band, right.owner)
        }
    }

    /// How many posts `user` ever made, the one deleted under `--anomalies` included.
    private func slotCount(_ user: Int) -> Int {
        postCount(user) + (plants(.deletedPost, user) ? 1 : 0)
    }

    /// Whether `user` made a post in `band`: nil if not, else whether it was deleted (the user's last slot).
    func post(of user: Int, inBand band: Int) -> Bool? {
        let slots = slotCount(user)
        guard slots > 0 else { return nil }
        // Slot k lies in band (k * bands / slots + phase) mod bands: evenly spread, one per band at most.
        let bands = Self.postBands
        let shifted = (band - Int(dice.bits(.postPhase, user) % UInt64(bands)) + bands) % bands
        let k = (shifted * slots + bands - 1) / bands
        guard k < slots, k * bands / slots == shifted else { return nil }
        return k == slots - 1 && slots > postCount(user)
    }

    /// The user's posts, oldest first.
    func posts(of user: Int) -> [PostSlot] {
        (0..<Self.postBands).compactMap { band in
            post(of: user, inBand: band).flatMap { isDeleted in isDeleted ? nil : PostSlot(band: band, owner: user) }
        }
    }

    /// The post `user` deleted, under `--anomalies`.
    func deletedPost(of user: Int) -> PostSlot? {
        guard plants(.deletedPost, user) else { return nil }
        return (0..<Self.postBands).lazy.compactMap { band in
            self.post(of: user, inBand: band).flatMap { isDeleted in isDeleted ? PostSlot(band: band, owner: user) : nil
            }
        }.first
    }

    /// How many posts `user` has: most have a few, the active ones many.
    func postCount(_ user: Int) -> Int {
        let level = activity(user)
        return geometric(.postCount, user, 0, mean: 0.5 + 8 * level * level * level, cap: Self.maximumPosts)
    }

    /// The slot's creation time in milliseconds since 1970.
    func postMilliseconds(_ slot: PostSlot) -> Int {
        let ordinal = slot.band * users + slot.owner
        return Self.epochMilliseconds + ordinal * postSpacing
            + Int(dice.bits(.postJitter, slot.band, slot.owner) % UInt64(postSpacing - 1))
    }

    /// `created_at` in seconds, with microseconds that stay inside the key's millisecond.
    func postCreatedAt(_ slot: PostSlot) -> Double {
        let microseconds = 1 + Int(dice.bits(.postMicros, slot.band, slot.owner) % 999)
        return Double(postMilliseconds(slot) * 1000 + microseconds) / 1_000_000
    }

    /// The slot's push ID.
    func postKey(_ slot: PostSlot) -> String {
        Self.pushID(milliseconds: postMilliseconds(slot), random: dice.bits(.postRandom, slot.band, slot.owner))
    }

    /// Who liked the post, in uid order: a few for most posts, many for a celebrity's.
    func likers(_ slot: PostSlot) -> [Int] {
        guard users > 1 else { return [] }
        let boost = celebrityRank[slot.owner].map { 30.0 / Double($0 + 1) } ?? 1
        let wanted = geometric(.likes, slot.band, slot.owner, mean: 2.5 * boost, cap: min(users - 1, 400))
        var likers = Set<Int>()
        var draw = 0
        while likers.count < wanted, draw < 4 * wanted + 16 {
            let liker = Int(dice.bits(.liker, slot.band * users + slot.owner, draw) % UInt64(users))
            if liker != slot.owner { likers.insert(liker) }
            draw += 1
        }
        return likers.sorted()
    }

    /// The photo's displayed height, as the app computed it: the screen width scaled by the photo's aspect.
    func imageHeight(_ slot: PostSlot) -> Double {
        let bits = dice.bits(.image, slot.band, slot.owner)
        let screen = [320.0, 375.0, 414.0][Int(bits % 3)]
        if (bits >> 2) % 4 == 0 { return screen }  // a square crop
        // A photo of a common aspect ratio, a few pixels cropped.
        let width = 1000 + Int((bits >> 8) % 3033)
        let aspect = [0.75, 4.0 / 3, 0.5625, 16.0 / 9, 1.25, 0.8][Int((bits >> 24) % 6)]
        let height = Int(Double(width) * aspect) - Int((bits >> 32) % 20)
        return Double(height) / Double(width) * screen
    }

    /// A Firebase Storage download URL for the post's photo, stored in `folder` (URL-encoded) of `bucket`.
    func imageURL(_ slot: PostSlot, bucket: String, folder: String) -> String {
        "https://firebasestorage.googleapis.com/v0/b/\(bucket).appspot.com/o/\(folder)%2F"
            + "\(postMilliseconds(slot)).jpg?alt=media&token=\(token(.token, slot.band, slot.owner))"
    }

    /// AppCoda's `votes`: mostly a few, sometimes many.
    func votes(_ slot: PostSlot) -> Int {
        geometric(.votes, slot.band, slot.owner, mean: 3, cap: 10_000)
            * (dice.bits(.votes, slot.band, slot.owner, 1) % 50 == 0 ? 25 : 1)
    }

    // MARK: Chats

    /// A chat slot: the chat `a` started with `a + offsets[chatOffsets[pair]]`, or (`isDuplicate`) a second chat
    /// of the same pair started later, as the app's broken duplicate check let happen.
    struct ChatSlot: Comparable {
        var pair: Int
        var a: Int
        var isDuplicate: Bool
        var round: Int { isDuplicate ? 2 + pair : pair }
        static func < (left: ChatSlot, right: ChatSlot) -> Bool {
            (left.round, left.a) < (right.round, right.a)
        }
    }

    /// The chat's other member.
    func partner(_ slot: ChatSlot) -> Int { (slot.a + offsets[chatOffsets[slot.pair]]) % users }

    /// Whether the first chat of the slot's pair exists: the starter follows the partner, and they talked.
    func chatExists(pair: Int, a: Int) -> Bool {
        followsByOffset(a, chatOffsets[pair]) && dice.unit(.chat, a, pair) < 0.35
    }

    /// Whether the slot holds a chat (whose copies may have been deleted under `--anomalies`).
    func chatExists(_ slot: ChatSlot) -> Bool {
        guard chatExists(pair: slot.pair, a: slot.a) else { return false }
        return !slot.isDuplicate
            || (!plants(.deletedChat, slot.a, slot.pair) && plants(.chatDuplicate, slot.a, slot.pair))
    }

    /// Whether the chat's copies are gone while its messages stay (an orphan anomaly).
    func copiesDeleted(_ slot: ChatSlot) -> Bool { !slot.isDuplicate && plants(.deletedChat, slot.a, slot.pair) }

    /// Whether the chat carries `anomaly`; only chats whose copies exist do.
    func plants(_ anomaly: Anomaly, in slot: ChatSlot) -> Bool {
        !slot.isDuplicate && !copiesDeleted(slot) && plants(anomaly, slot.a, slot.pair)
    }

    /// The chats `user` holds a copy of, in key order.
    func chats(of user: Int) -> [ChatSlot] {
        var slots: [ChatSlot] = []
        for pair in chatOffsets.indices {
            let partnerOf = (user - offsets[chatOffsets[pair]] + users) % users
            for a in [user, partnerOf] {
                for isDuplicate in [false, true] {
                    let slot = ChatSlot(pair: pair, a: a, isDuplicate: isDuplicate)
                    if chatExists(slot), !copiesDeleted(slot) { slots.append(slot) }
                }
            }
        }
        return slots.sorted()
    }

    /// The chat's creation time, which is its first message's.
    func chatMilliseconds(_ slot: ChatSlot) -> Int {
        Self.epochMilliseconds + (slot.round * users + slot.a) * chatSpacing
            + Int(dice.bits(.chatJitter, slot.round, slot.a) % UInt64(chatSpacing - 1))
    }

    /// The chat's push ID.
    func chatKey(_ slot: ChatSlot) -> String {
        Self.pushID(milliseconds: chatMilliseconds(slot), random: dice.bits(.chatRandom, slot.round, slot.a))
    }

    /// The `memberHash` the app wrote: `uid1.hashValue ^ uid2.hashValue`, random per launch.
    func legacyMemberHash(_ slot: ChatSlot, copy: Int = 0) -> String {
        String(Int64(bitPattern: dice.bits(.legacyHash, slot.round * users + slot.a, copy)))
    }

    /// One message of a chat.
    struct Message {
        var key: String
        var content: String
        var sender: Int
        var timestamp: Double
    }

    private static let phrases = [
        "hey! 👋", "see you at 8 😀", "¿qué tal?", "Ça marche !", "日本語のメッセージ", "ok", "on my way 🚲",
        "did you see the photo?", "😂😂😂", "Спасибо!", "맛있겠다", "tomorrow then", "שבת שלום", "Grüße aus Köln",
        "lol \"quoted\" text", "line one\nline two", "back\\slash", "👍🏽",
    ]

    /// The chat's messages, oldest first: alternating members, gaps of seconds to days.
    func messages(_ slot: ChatSlot) -> [Message] {
        let count = 1 + geometric(.messageCount, slot.round, slot.a, mean: 4, cap: 60)
        let members = [slot.a, partner(slot)]
        var milliseconds = chatMilliseconds(slot)
        var messages: [Message] = []
        messages.reserveCapacity(count)
        let id = slot.round * users + slot.a
        for index in 0..<count {
            if index > 0 {
                let gap = dice.bits(.messageGap, id, index)
                milliseconds += 1000 + Int(gap % 2) * Int((gap >> 1) % 172_800_000) + Int((gap >> 40) % 60_000)
            }
            let microseconds = 1 + Int(dice.bits(.messageMicros, id, index) % 999)
            let sender = index == 0 ? slot.a : members[Int(dice.bits(.sender, id, index) % 2)]
            messages.append(
                Message(
                    key: Self.pushID(milliseconds: milliseconds, random: dice.bits(.messageRandom, id, index)),
                    content: Self.phrases[Int(dice.bits(.content, id, index) % UInt64(Self.phrases.count))],
                    sender: sender,
                    timestamp: Double(milliseconds * 1000 + microseconds) / 1_000_000))
        }
        return messages
    }

    // MARK: Anomalies

    /// Whether the user or chat `(a, b)` carries `anomaly` (never without `--anomalies`).
    func plants(_ anomaly: Anomaly, _ a: Int, _ b: Int = 0) -> Bool {
        plantsAnomalies && dice.unit(.anomaly, Int(anomaly.rawValue), a, b) < anomalyChance
    }

    // MARK: Helpers

    /// A count with a long tail: successes of coin flips before the first failure, with the given mean.
    private func geometric(_ stream: Stream, _ a: Int, _ b: Int, mean: Double, cap: Int) -> Int {
        let continuing = mean / (mean + 1)
        var count = 0
        while count < cap, dice.unit(stream, a, b, count) < continuing { count += 1 }
        return count
    }

    /// A Firebase Storage download token (a lowercase UUID).
    private func token(_ stream: Stream, _ a: Int, _ b: Int) -> String {
        let hex = Array("0123456789abcdef".utf8)
        var characters: [UInt8] = []
        var bits = dice.bits(stream, a, b)
        for index in 0..<32 {
            if index == 16 { bits = dice.bits(stream, a, b, 1) }
            if [8, 12, 16, 20].contains(index) { characters.append(UInt8(ascii: "-")) }
            characters.append(hex[Int(bits & 15)])
            bits >>= 4
        }
        return String(decoding: characters, as: UTF8.self)
    }

    /// A push ID: the milliseconds in 8 characters, then 12 random ones.
    static func pushID(milliseconds: Int, random: UInt64) -> String {
        var characters = [UInt8](repeating: 0, count: 20)
        var time = milliseconds
        for position in stride(from: 7, through: 0, by: -1) {
            characters[position] = PushIDGenerator.alphabet[time % 64]
            time /= 64
        }
        var bits = random
        for position in 8..<20 {
            if position == 18 { bits = Dice.mix(random) }
            characters[position] = PushIDGenerator.alphabet[Int(bits % 64)]
            bits /= 64
        }
        return String(decoding: characters, as: UTF8.self)
    }
}

/// Random bits addressed by (stream, indices): the same address always gives the same bits, on any machine.
struct Dice {
    let seed: UInt64

    /// 64 random bits for the address.
    func bits(_ stream: GeneratedWorld.Stream, _ a: Int, _ b: Int = 0, _ c: Int = 0) -> UInt64 {
        var state = Self.mix(seed &+ stream.rawValue &* 0x9E37_79B9_7F4A_7C15)
        state = Self.mix(state ^ UInt64(bitPattern: Int64(a)))
        state = Self.mix(state ^ UInt64(bitPattern: Int64(b)) &* 0xD6E8_FEB8_6659_FD93)
        return Self.mix(state ^ UInt64(bitPattern: Int64(c)) &* 0xA076_1D64_78BD_642F)
    }

    /// A number in [0, 1) for the address.
    func unit(_ stream: GeneratedWorld.Stream, _ a: Int, _ b: Int = 0, _ c: Int = 0) -> Double {
        Double(bits(stream, a, b, c) >> 11) * 0x1p-53
    }

    /// SplitMix64's finalizer.
    static func mix(_ value: UInt64) -> UInt64 {
        var z = value &+ 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
