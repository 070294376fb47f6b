/// Numbers written as JavaScript writes them (ECMAScript `Number::toString`): the shortest digits that read back
/// as the same double, in plain notation for exponents from -7 to 20 and `1e+21` / `5e-7` style outside it.
/// Firebase's exports are written by JavaScript, so this is how a number looks in one.
public enum JavaScriptNumber {
    /// `4`, `1497918951.91262`, `1e+21`, `5e-7`, `-0` as `0`. Non-finite values have no JSON form and are
    /// written as `null`, which callers must not produce.
    public static func format(_ value: Double) -> String {
        guard value.isFinite else { return "null" }
        if value == 0 { return "0" }
        if value == value.rounded(), abs(value) < 1e15 {
            return String(Int64(value))
        }
        // Swift's description is the shortest round-trip digit string; only its layout differs from JavaScript's.
        return format(decimal: value.description) ?? "null"
    }

    /// Re-lays out a finite decimal number's text (`1000000000000000000000`, `1e+21`, `5E-07`, `0.50`) in
    /// JavaScript's notation, keeping its digits. Returns nil for text that is not a decimal number.
    public static func format(decimal text: String) -> String? {
        guard let (isNegative, digits, exponent) = decompose(text) else { return nil }
        if digits.isEmpty { return "0" }
        return layout(isNegative: isNegative, digits: digits, exponent: exponent)
    }

    /// Sign, significant digits without leading or trailing zeros, and the decimal exponent `n` such that the
    /// value is `0.digits × 10^n`.
    private static func decompose(_ text: String) -> (Bool, [UInt8], Int)? {
        var bytes = Array(text.utf8)[...]
        var isNegative = false
        if bytes.first == UInt8(ascii: "-") {
            isNegative = true
            bytes = bytes.dropFirst()
        } else if bytes.first == UInt8(ascii: "+") {
            bytes = bytes.dropFirst()
        }
        var digits: [UInt8] = []
        var pointPosition: Int?
        var exponent = 0
        var sawDigit = false
        var index = bytes.startIndex
        while index < bytes.endIndex {
            let byte = bytes[index]
            if byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") {
                digits.append(byte)
                sawDigit = true
            } else if byte == UInt8(ascii: "."), pointPosition == nil {
                pointPosition = digits.count
            } else if byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E") {
                guard let parsed = Int(String(decoding: bytes[(index + 1)...], as: UTF8.self)) else { return nil }
                exponent = parsed
                break
            } else {
                return nil
            }
            index += 1
        }
        guard sawDigit else { return nil }
        var pointAt = (pointPosition ?? digits.count) + exponent
        let leadingZeros = digits.prefix { $0 == UInt8(ascii: "0") }.count
        digits.removeFirst(leadingZeros)
        pointAt -= leadingZeros
        while digits.last == UInt8(ascii: "0") { digits.removeLast() }
        if digits.isEmpty { isNegative = false }
        return (isNegative, digits, pointAt)
    }

    /// ECMAScript Number::toString, step 6 onwards, with k = digits.count and n = exponent.
    private static func layout(isNegative: Bool, digits: [UInt8], exponent n: Int) -> String {
        let k = digits.count
        var out: [UInt8] = isNegative ? [UInt8(ascii: "-")] : []
        out.reserveCapacity(k + 24)
        if k <= n, n <= 21 {
            out += digits
            out += repeatElement(UInt8(ascii: "0"), count: n - k)
        } else if 0 < n, n <= 21 {
            out += digits[..<n]
            out.append(UInt8(ascii: "."))
            out += digits[n...]
        } else if -6 < n, n <= 0 {
            out += [UInt8(ascii: "0"), UInt8(ascii: ".")]
            out += repeatElement(UInt8(ascii: "0"), count: -n)
            out += digits
        } else {
            out.append(digits[0])
            if k > 1 {
                out.append(UInt8(ascii: "."))
                out += digits[1...]
            }
            out.append(UInt8(ascii: "e"))
            out.append(n - 1 >= 0 ? UInt8(ascii: "+") : UInt8(ascii: "-"))
            out += String(abs(n - 1)).utf8
        }
        return String(decoding: out, as: UTF8.self)
    }
}
