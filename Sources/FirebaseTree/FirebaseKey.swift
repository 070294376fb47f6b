import Foundation

/// Firebase's rules for keys: which are valid, which read as integers, and the order RTDB sorts them in
/// (firebase-js-sdk `core/util/util.ts`, `nameCompare` and `tryParseInt`).
public enum FirebaseKey {
    /// The pseudo-child that carries a node's priority in export format.
    public static let priority = ".priority"
    /// The pseudo-child that carries a leaf's value when the leaf has a priority.
    public static let value = ".value"
    /// Firebase's limit on a path's length: its keys' UTF-8 bytes, each with its `/`.
    public static let maximumPathBytes = 768
    /// Firebase's limit on a string value's UTF-8 bytes.
    public static let maximumStringBytes = 10 << 20
    /// Firebase's limit on a path's levels: a node is at most this many keys below the root.
    public static let maximumDepth = 32
    /// Why a node deeper than `maximumDepth` cannot exist.
    public static let tooDeep = "deeper than Firebase's \(maximumDepth) levels"

    /// How many bytes `describe(path:)` gives a path at most, and one key in it.
    public static let describedPathBytes = 1024, describedKeyBytes = 128

    /// A path as an error message shows it, `/users/u1/username`, in at most `describedPathBytes` bytes however
    /// long or deep it is: a key over `describedKeyBytes` keeps its first bytes and "…", and a path still too long
    /// keeps its first and last keys around the count of those left out (`/0/0/…(9,990 more)…/0`).
    public static func describe(path keys: some Collection<String>) -> String {
        let whole = "/" + keys.joined(separator: "/")
        guard whole.utf8.count > describedPathBytes else { return whole }
        let cut = keys.map { shortened($0, toBytes: describedKeyBytes) }
        let joined = "/" + cut.joined(separator: "/")
        guard joined.utf8.count > describedPathBytes else { return joined }
        // Keys from both ends while they fit; the middle is counted.
        var head: [String] = [], tail: [String] = []
        var bytes = 32
        var front = 0, back = cut.count - 1
        while front <= back {
            let next = head.count <= tail.count ? cut[front] : cut[back]
            guard bytes + next.utf8.count + 1 <= describedPathBytes else { break }
            bytes += next.utf8.count + 1
            if head.count <= tail.count {
                head.append(next)
                front += 1
            } else {
                tail.insert(next, at: 0)
                back -= 1
            }
        }
        let left = cut.count - head.count - tail.count
        var digits = String(left)
        for index in stride(from: digits.count - 3, to: 0, by: -3) {
            digits.insert(",", at: digits.index(digits.startIndex, offsetBy: index))
        }
        let middle = "…(\(digits) more)…"
        return "/" + (head + [middle] + tail).joined(separator: "/")
    }

    /// Why the node at `path` (keys from the root) cannot exist in Firebase, as import would refuse it; nil when
    /// it can. `.priority` and `.value` are no nodes.
    public static func problem(withPath path: some Collection<String>) -> String? {
        var bytes = 0
        for key in path {
            if let problem = problem(withNodeKey: key) { return "\"\(key)\" cannot be a Firebase key: \(problem)" }
            bytes += key.utf8.count + 1
        }
        return bytes > maximumPathBytes ? pathTooLong : nil
    }

    /// `text` as it is when it has at most `bytes` bytes of UTF-8, else its first bytes up to a character's
    /// boundary and "…".
    public static func shortened(_ text: String, toBytes bytes: Int) -> String {
        guard text.utf8.count > bytes else { return text }
        var end = text.utf8.index(text.utf8.startIndex, offsetBy: bytes)
        while end > text.utf8.startIndex, UTF8.isContinuation(text.utf8[end]) { end = text.utf8.index(before: end) }
        return String(text[..<end]) + "…"
    }

    /// Why a path over `maximumPathBytes` cannot exist.
    public static let pathTooLong = "a path longer than Firebase's \(maximumPathBytes) bytes"

    /// Why the string whose UTF-8 is `text` cannot be a Firebase value (over 10 MB, or with a NUL, which
    /// PostgreSQL text cannot hold), or nil when it can.
    /// Import asks this of every string it reads, so the NUL search is one `memchr`.
    public static func problem(withString text: UnsafeBufferPointer<UInt8>) -> String? {
        let count = text.count
        // A reader keeps only the first bytes of a longer string (`JSONReader.isTextCut`): its length is not told.
        if count > maximumStringBytes { return "a string longer than Firebase's 10 MB limit" }
        if let base = text.baseAddress, memchr(base, 0, count) != nil {
            return "a string with a NUL character (U+0000), which PostgreSQL text cannot hold"
        }
        return nil
    }

    /// Why `text` cannot be a Firebase value, or nil when it can.
    public static func problem(withString text: String) -> String? {
        var text = text
        return text.withUTF8 { problem(withString: $0) }
    }

    /// Why `key` cannot be a Firebase key, or nil when it can. `.priority` and `.value` are allowed here; the
    /// tree reader gives them their meaning.
    public static func problem(with key: UnsafeBufferPointer<UInt8>) -> String? {
        guard let base = key.baseAddress, !key.isEmpty else { return "empty key" }
        let count = key.count
        var index = 0
        // Eight bytes at a time, byte by byte only through a word that may hold a forbidden byte (a push ID's "-").
        while index < count {
            if index + 8 <= count, !mayHoldForbidden(UnsafeRawPointer(base + index)) {
                index += 8
                continue
            }
            // A tail shorter than a word: the last eight bytes, overlapping those read, may clear it at once.
            if index + 8 > count, count >= 8, !mayHoldForbidden(UnsafeRawPointer(base + count - 8)) {
                return nil
            }
            let end = min(index + 8, count)
            if let problem = problem(in: UnsafeBufferPointer(rebasing: key[index..<end]), of: key) { return problem }
            index = end
        }
        return nil
    }

    /// The problem of the first forbidden byte in `bytes`, a part of `key`.
    private static func problem(in bytes: UnsafeBufferPointer<UInt8>, of key: UnsafeBufferPointer<UInt8>) -> String? {
        for byte in bytes where mayBeForbidden(byte) {
            switch byte {
            case 0x00...0x1F, 0x7F:
                return "key contains a control character (U+\(hex4(byte)))"
            case UInt8(ascii: "."), UInt8(ascii: "$"), UInt8(ascii: "#"), UInt8(ascii: "["), UInt8(ascii: "]"),
                UInt8(ascii: "/"):
                if byte == UInt8(ascii: "."), isPseudoChild(key) { continue }
                return "key contains '\(Character(Unicode.Scalar(byte)))', which Firebase forbids in keys"
            default: continue
            }
        }
        return nil
    }

    /// Why `key` cannot name a node (a key of a path, not a child in a file): `problem(with:)`, and `.priority`
    /// and `.value` are no nodes.
    public static func problem(withNodeKey key: String) -> String? {
        problem(with: key) ?? (key == priority || key == value ? "a priority is not a node" : nil)
    }

    /// Why `key` cannot be a Firebase key, or nil when it can.
    public static func problem(with key: String) -> String? {
        // The borrowed string's own bytes: `withUTF8` on a copy retained and released it.
        if let problem = key.utf8.withContiguousStorageIfAvailable({ problem(with: $0) }) { return problem }
        var key = key
        return key.withUTF8 { problem(with: $0) }
    }

    /// False for every byte a key may hold anywhere, in one or two comparisons for letters, digits and UTF-8
    /// (import asks of every byte of every key).
    @inline(__always)
    private static func mayBeForbidden(_ byte: UInt8) -> Bool {
        if byte >= 0x60 { return byte == 0x7F }
        if byte >= 0x41 { return byte == UInt8(ascii: "[") || byte == UInt8(ascii: "]") }
        return byte < 0x30
    }

    /// Whether any of the eight bytes at `word` is a control character or one of `#$./[]`: the bytes a key may not
    /// hold (`.` but in `.priority` and `.value`), so that a push ID's "-" passes with its word.
    @inline(__always)
    private static func mayHoldForbidden(_ word: UnsafeRawPointer) -> Bool {
        let bytes = word.loadUnaligned(as: UInt64.self)
        let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
        // A byte's high bit ends up set when it is below 0x20 or equals one of the others ("." and "/" differ in
        // their lowest bit; bytes of 0x80 and up, UTF-8, are taken out); the answer for the word as a whole is
        // exact.
        func equal(_ bytes: UInt64, _ byte: UInt64) -> UInt64 { (bytes ^ (ones &* byte)) &- ones }
        let below = bytes &- ones &* 0x20
        let signs = equal(bytes, 0x23) | equal(bytes, 0x24) | equal(bytes | ones, 0x2F)
        let brackets = equal(bytes, 0x5B) | equal(bytes, 0x5D) | equal(bytes, 0x7F)
        return (below | signs | brackets) & ~bytes & highs != 0
    }

    private static func isPseudoChild(_ key: UnsafeBufferPointer<UInt8>) -> Bool {
        key.elementsEqual(priority.utf8) || key.elementsEqual(value.utf8)
    }

    private static func hex4(_ byte: UInt8) -> String {
        let digits = String(byte, radix: 16, uppercase: true)
        return String(repeating: "0", count: 4 - digits.count) + digits
    }

    /// The key's value when RTDB orders it as an integer: `-?0*[0-9]{1,10}` within the 32-bit range.
    public static func integerValue(_ key: String) -> Int32? {
        var key = key
        return key.withUTF8 { integerValue($0) }
    }

    /// The key's value when RTDB orders it as an integer: `-?0*[0-9]{1,10}` within the 32-bit range.
    public static func integerValue(_ key: UnsafeBufferPointer<UInt8>) -> Int32? {
        var index = 0
        let isNegative = key.first == UInt8(ascii: "-")
        if isNegative { index = 1 }
        while index < key.count - 1, key[index] == UInt8(ascii: "0") { index += 1 }
        let digitCount = key.count - index
        guard digitCount >= 1, digitCount <= 10 else { return nil }
        var value: Int64 = 0
        while index < key.count {
            let digit = key[index] &- UInt8(ascii: "0")
            guard digit <= 9 else { return nil }
            value = value * 10 + Int64(digit)
            index += 1
        }
        if isNegative { value = -value }
        return Int32(exactly: value)
    }

    /// The index `key` denotes when the SDKs may render its object as an array: `0` or `[1-9][0-9]*`.
    public static func arrayIndex(_ key: String) -> Int? {
        var key = key
        return key.withUTF8 { arrayIndex(utf8: $0) }
    }

    /// `arrayIndex(_:)` of a key's UTF-8 bytes.
    package static func arrayIndex(utf8: UnsafeBufferPointer<UInt8>) -> Int? {
        guard let first = utf8.first, first >= UInt8(ascii: "0"), first <= UInt8(ascii: "9"),
            first != UInt8(ascii: "0") || utf8.count == 1, utf8.count <= 15
        else { return nil }
        var value = 0
        for byte in utf8 {
            let digit = byte &- UInt8(ascii: "0")
            guard digit <= 9 else { return nil }
            value = value * 10 + Int(digit)
        }
        return value
    }

    /// RTDB's key order: integer keys first, numerically (ties by length, then bytes), then the rest by UTF-16
    /// code units.
    public static func precedes(_ a: String, _ b: String) -> Bool {
        compare(a, b) < 0
    }

    /// The order exports write an object's children in: `.priority` first, then RTDB order.
    public static func exportPrecedes(_ a: String, _ b: String) -> Bool {
        if a == priority { return b != priority }
        if b == priority { return false }
        return compare(a, b) < 0
    }

    /// The keys of a path written `/a/b` (or `a/b/`, `/` for the root), empty segments dropped as the SDKs' `Path`
    /// drops them. Split by Unicode scalars: as Characters, a key that starts with a combining mark would swallow
    /// the "/" before it.
    public static func keys(ofPath text: String) -> [String] {
        text.unicodeScalars.split(separator: "/", omittingEmptySubsequences: true).map {
            String(String.UnicodeScalarView($0))
        }
    }

    /// Whether path `a` comes before path `b`: by their first differing key in RTDB order, else the shorter first.
    public static func pathPrecedes(_ a: [String], _ b: [String]) -> Bool {
        for (x, y) in zip(a, b) where !same(x, y) { return precedes(x, y) }
        return a.count < b.count
    }

    /// Whether two paths are the same, keys compared as bytes (`==` on `[String]` is canonical equivalence).
    /// An export compares every row's parent path with the last one's, usually the very same array: that is
    /// answered from the arrays' storage without looking at a key.
    @inlinable
    public static func samePath(_ a: [String], _ b: [String]) -> Bool {
        guard a.count == b.count else { return false }
        let isShared = a.withUnsafeBufferPointer { a in b.withUnsafeBufferPointer { a.baseAddress == $0.baseAddress } }
        if isShared { return true }
        for index in a.indices where !same(a[index], b[index]) { return false }
        return true
    }

    /// Whether `path` is `base` or lies below it, keys compared as bytes.
    public static func isPath(_ path: ArraySlice<String>, atOrBelow base: ArraySlice<String>) -> Bool {
        path.count >= base.count && zip(path, base).allSatisfy { same($0, $1) }
    }

    /// Keys compared as bytes: Swift's `==` on strings is canonical equivalence, and `"é"` and `"e\u{301}"`
    /// are two Firebase keys.
    @inline(__always)
    public static func same(_ a: String, _ b: String) -> Bool {
        // The borrowed strings' own bytes: `withUTF8` on a copy retained and released each string per comparison.
        if let same = b.utf8.withContiguousStorageIfAvailable({ same(a, $0) }) { return same }
        var b = b
        return b.withUTF8 { same(a, $0) }
    }

    /// Whether the key `a` has exactly the bytes `b`.
    @inline(__always)
    public static func same(_ a: String, _ b: UnsafeBufferPointer<UInt8>) -> Bool {
        func equal(_ a: UnsafeBufferPointer<UInt8>) -> Bool {
            guard a.count == b.count else { return false }
            guard let x = a.baseAddress, let y = b.baseAddress else { return a.count == 0 }
            return x == y || memcmp(x, y, a.count) == 0
        }
        if let same = a.utf8.withContiguousStorageIfAvailable(equal) { return same }
        var a = a
        return a.withUTF8(equal)
    }

    /// -1, 0 or 1 as `a` sorts before, with or after `b` in RTDB's key order.
    public static func compare(_ a: String, _ b: String) -> Int {
        var a = a
        var b = b
        return a.withUTF8 { a in b.withUTF8 { b in compare(a, b) } }
    }

    /// `a` against `b` in byte order and in RTDB's key order (-1, 0 or 1 each), their common prefix read once:
    /// import's tracker of repeated keys asks both of every key and the one before it.
    package static func compareInBothOrders(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>)
        -> (bytes: Int, rtdb: Int)
    {
        let index = firstDifference(a, b)
        let bytes: Int
        let utf16: Int
        if index == min(a.count, b.count) {
            bytes = a.count == b.count ? 0 : (a.count < b.count ? -1 : 1)
            utf16 = bytes
        } else {
            bytes = a[index] < b[index] ? -1 : 1
            utf16 = utf16Weight(a[index]) < utf16Weight(b[index]) ? -1 : 1
        }
        let isInteger = (mayBeInteger(a) && integerValue(a) != nil) || (mayBeInteger(b) && integerValue(b) != nil)
        return (bytes, isInteger ? compare(a, b) : utf16)
    }

    /// -1, 0 or 1 as `a` sorts before, with or after `b` in RTDB's key order.
    public static func compare(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Int {
        let aInteger = mayBeInteger(a) ? integerValue(a) : nil
        let bInteger = mayBeInteger(b) ? integerValue(b) : nil
        switch (aInteger, bInteger) {
        case let (x?, y?):
            if x != y { return x < y ? -1 : 1 }
            // One value spelled two ways: the shorter first, as the SDKs order them; then by bytes ("-0", "00"),
            // which RTDB leaves undefined and exports need defined.
            if a.count != b.count { return a.count < b.count ? -1 : 1 }
            return compareUTF16(a, b)
        case (.some, nil): return -1
        case (nil, .some): return 1
        case (nil, nil): return compareUTF16(a, b)
        }
    }

    /// Appends the key's position in export order as bytes that compare as the keys do (migration 0008's
    /// `rtdb_key_order`, byte for byte): `.priority` as nothing; a 32-bit integer as 2, then "1", its digits'
    /// count (as the byte "0" plus the count) and digits for a value of 0 or more, or "0", ten less the count and
    /// the digits' nines' complement for a negative one, with its length in four digits and the key itself after
    /// a sign or leading zeros (so that "-0" and "00", one value of one length, still have an order); any other key as 3 and its UTF-8, with U+E001 before each character from U+E000 to U+FFFF and U+E000
    /// before each astral one (their UTF-16 surrogates sort lower). Never holds the byte 1, which ends each element
    /// of a path's order.
    package static func appendOrder(of key: UnsafeBufferPointer<UInt8>, to bytes: inout [UInt8]) {
        if key.elementsEqual(priority.utf8) { return }
        if mayBeInteger(key), let value = integerValue(key) {
            let digits = Array(String(abs(Int(value))).utf8)
            bytes.append(2)
            if value >= 0 {
                bytes.append(UInt8(ascii: "1"))
                bytes.append(UInt8(ascii: "0") + UInt8(digits.count))
                bytes.append(contentsOf: digits)
                if key.count != digits.count {
                    appendDigits(key.count, width: 4, to: &bytes)
                    bytes.append(contentsOf: key)
                }
            } else {
                bytes.append(UInt8(ascii: "0"))
                bytes.append(UInt8(ascii: "0") + UInt8(10 - digits.count))
                bytes.append(contentsOf: digits.map { UInt8(ascii: "9") - ($0 - UInt8(ascii: "0")) })
                appendDigits(key.count, width: 4, to: &bytes)
                bytes.append(contentsOf: key)
            }
            return
        }
        bytes.append(3)
        for byte in key {
            // Lead bytes: 0xEE and 0xEF start U+E000..U+FFFF, 0xF0 and up astral characters.
            if byte >= 0xEE, byte <= 0xF4 { bytes.append(contentsOf: [0xEE, 0x80, byte >= 0xF0 ? 0x80 : 0x81]) }
            bytes.append(byte)
        }
    }

    /// Appends the order of the path `keys` (root first), as migration 0008's `rtdb_path_order`: each key's order
    /// and the byte 1. A node's descendants sort after its own order and before `pathOrderUpperBound` of it.
    package static func appendOrder(ofPath keys: some Sequence<String>, to bytes: inout [UInt8]) {
        for var key in keys {
            key.withUTF8 { appendOrder(of: $0, to: &bytes) }
            bytes.append(1)
        }
    }

    /// The order of the path `keys` as `appendOrder(ofPath:to:)` writes it.
    package static func pathOrder(_ keys: some Sequence<String>) -> [UInt8] {
        var bytes: [UInt8] = []
        appendOrder(ofPath: keys, to: &bytes)
        return bytes
    }

    /// The order of one key as `appendOrder(of:to:)` writes it.
    package static func orderBytes(of key: String) -> [UInt8] {
        var bytes: [UInt8] = []
        var key = key
        key.withUTF8 { appendOrder(of: $0, to: &bytes) }
        return bytes
    }

    /// The order of one key as text (its bytes are UTF-8), as migration 0008's `rtdb_key_order` returns it.
    package static func order(of key: String) -> String {
        String(decoding: orderBytes(of: key), as: UTF8.self)
    }

    /// Whether the key may sit elsewhere in RTDB order than in byte order, as migration 0008's
    /// `rtdb_key_needs_order`: digit-led keys (`0`-`9`, or `-` and a digit) and keys with a character from U+E000 up.
    package static func needsOrder(_ key: String) -> Bool {
        let bytes = key.utf8
        guard let first = bytes.first else { return false }
        if first >= UInt8(ascii: "0"), first <= UInt8(ascii: "9") { return true }
        if first == UInt8(ascii: "-"), let second = bytes.dropFirst().first, second >= UInt8(ascii: "0"),
            second <= UInt8(ascii: "9")
        {
            return true
        }
        return bytes.contains { $0 >= 0xEE && $0 <= 0xF4 }
    }

    /// The least order above every descendant of the path whose order is `order`: its last byte (1) raised to 2.
    package static func pathOrderUpperBound(_ order: [UInt8]) -> [UInt8] {
        precondition(order.last == 1, "a path order ends with the byte 1")
        return order.dropLast() + [2]
    }

    private static func appendDigits(_ value: Int, width: Int, to bytes: inout [UInt8]) {
        let digits = Array(String(value).utf8)
        bytes.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: max(0, width - digits.count)))
        bytes.append(contentsOf: digits)
    }

    /// A cheap test that rules out most keys before parsing: integers start with a digit or `-`.
    @inline(__always)
    private static func mayBeInteger(_ key: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let first = key.first else { return false }
        return (first >= UInt8(ascii: "0") && first <= UInt8(ascii: "9")) || first == UInt8(ascii: "-")
    }

    /// UTF-16 code-unit order of two UTF-8 strings without transcoding: it equals byte order except that the
    /// lead bytes of U+E000–U+FFFF (0xEE, 0xEF) sort after those of U+10000 and above (0xF0–0xF4), whose
    /// surrogates are smaller code units.
    package static func compareUTF16(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Int {
        let index = firstDifference(a, b)
        if index == min(a.count, b.count) {
            return a.count == b.count ? 0 : (a.count < b.count ? -1 : 1)
        }
        let x = utf16Weight(a[index])
        let y = utf16Weight(b[index])
        return x < y ? -1 : 1
    }

    /// Where `a` and `b` first differ: the index of the first unequal byte, or the shorter one's length when it
    /// begins the other. Eight bytes at a time, to the lowest set byte of the words' difference.
    private static func firstDifference(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Int {
        let common = min(a.count, b.count)
        var index = 0
        if let x = a.baseAddress, let y = b.baseAddress {
            while index + 8 <= common {
                let difference =
                    UnsafeRawPointer(x + index).loadUnaligned(as: UInt64.self)
                    ^ UnsafeRawPointer(y + index).loadUnaligned(as: UInt64.self)
                if difference != 0 { return index + UInt64(littleEndian: difference).trailingZeroBitCount / 8 }
                index += 8
            }
        }
        while index < common, a[index] == b[index] { index += 1 }
        return index
    }

    @inline(__always)
    private static func utf16Weight(_ byte: UInt8) -> UInt16 {
        // Only lead bytes can differ at the first mismatch when the earlier bytes agree on character boundaries;
        // continuation bytes (0x80–0xBF) keep their order.
        byte == 0xEE || byte == 0xEF ? UInt16(byte) + 0x100 : UInt16(byte)
    }
}
