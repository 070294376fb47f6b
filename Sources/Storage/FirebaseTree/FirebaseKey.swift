/// Firebase's rules for keys: which are valid, which read as integers, and the order RTDB sorts them in
/// (firebase-js-sdk `core/util/util.ts`, `nameCompare` and `tryParseInt`).
public enum FirebaseKey {
    /// The pseudo-child that carries a node's priority in export format.
    public static let priority = ".priority"
    /// The pseudo-child that carries a leaf's value when the leaf has a priority.
    public static let value = ".value"

    /// Why `key` cannot be a Firebase key, or nil when it can. `.priority` and `.value` are allowed here; the
    /// tree reader gives them their meaning.
    public static func problem(with key: UnsafeBufferPointer<UInt8>) -> String? {
        if key.isEmpty { return "empty key" }
        for byte in key {
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

    /// Why `key` cannot be a Firebase key, or nil when it can.
    public static func problem(with key: String) -> String? {
        var key = key
        return key.withUTF8 { problem(with: $0) }
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
    static func arrayIndex(utf8: UnsafeBufferPointer<UInt8>) -> Int? {
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

    /// RTDB's key order: integer keys first, numerically (ties by length), then the rest by UTF-16 code units.
    public static func precedes(_ a: String, _ b: String) -> Bool {
        compare(a, b) < 0
    }

    /// The order exports write an object's children in: `.priority` first, then RTDB order.
    public static func exportPrecedes(_ a: String, _ b: String) -> Bool {
        if a == priority { return b != priority }
        if b == priority { return false }
        return compare(a, b) < 0
    }

    /// -1, 0 or 1 as `a` sorts before, with or after `b` in RTDB's key order.
    public static func compare(_ a: String, _ b: String) -> Int {
        var a = a
        var b = b
        return a.withUTF8 { a in b.withUTF8 { b in compare(a, b) } }
    }

    /// -1, 0 or 1 as `a` sorts before, with or after `b` in RTDB's key order.
    public static func compare(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Int {
        let aInteger = mayBeInteger(a) ? integerValue(a) : nil
        let bInteger = mayBeInteger(b) ? integerValue(b) : nil
        switch (aInteger, bInteger) {
        case let (x?, y?):
            if x != y { return x < y ? -1 : 1 }
            return a.count == b.count ? 0 : (a.count < b.count ? -1 : 1)
        case (.some, nil): return -1
        case (nil, .some): return 1
        case (nil, nil): return compareUTF16(a, b)
        }
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
    static func compareUTF16(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Int {
        let common = min(a.count, b.count)
        var index = 0
        while index < common, a[index] == b[index] { index += 1 }
        if index == common {
            return a.count == b.count ? 0 : (a.count < b.count ? -1 : 1)
        }
        let x = utf16Weight(a[index])
        let y = utf16Weight(b[index])
        return x < y ? -1 : 1
    }

    @inline(__always)
    private static func utf16Weight(_ byte: UInt8) -> UInt16 {
        // Only lead bytes can differ at the first mismatch when the earlier bytes agree on character boundaries;
        // continuation bytes (0x80–0xBF) keep their order.
        byte == 0xEE || byte == 0xEF ? UInt16(byte) + 0x100 : UInt16(byte)
    }
}
