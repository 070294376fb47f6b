import Foundation

extension JSONReader {
    /// Consumes on both readers, each on an object's opening brace, an object whose bytes are the same on both
    /// but for whitespace between tokens on the first reader's side, and returns how many nodes it is (itself and
    /// every value in it); nil, consuming nothing, where they differ, or where the object holds what a byte's
    /// likeness does not settle: an array, a priority or `.value`, or more bytes than the readers' buffers hold.
    ///
    /// For a comparison with the store's own export (compact, in RTDB order, with no arrays, nulls or empty
    /// objects), where an unchanged node is the same text: the tokens of the common case are not read, strings
    /// are compared eight bytes at a time, and an object that parts is then read token by token as before,
    /// from its start. The second reader's text is taken to be valid JSON; the first's is then the same text.
    static func skipEqualObjects(_ first: inout JSONReader, _ second: inout JSONReader) throws -> Int? {
        guard first.token == .objectStart, second.token == .objectStart,
            let extent = try plainObjectExtent(&second)
        else { return nil }
        // The common case: the same bytes, compared as memory is.
        while first.unconsumed.count < extent.bytes, try first.readAhead() {}
        if first.unconsumed.count >= extent.bytes, let a = first.unconsumed.baseAddress,
            let b = second.unconsumed.baseAddress, memcmp(a, b, extent.bytes) == 0
        {
            first.skipObject(spanning: extent.bytes)
            second.skipObject(spanning: extent.bytes)
            return extent.nodes
        }
        var lanes = (first: first.unconsumed, second: second.unconsumed)
        var (i, j) = (0, 0)
        /// Whether byte `i` (`j`) of the lane is read, reading ahead for it if need be.
        func hasFirst(_ count: Int = 1) throws -> Bool {
            while i + count > lanes.first.count {
                guard try first.readAhead() else { return false }
                lanes.first = first.unconsumed
            }
            return true
        }
        func hasSecond(_ count: Int = 1) throws -> Bool {
            while j + count > lanes.second.count {
                guard try second.readAhead() else { return false }
                lanes.second = second.unconsumed
            }
            return true
        }
        /// Moves `i` and `j` past a string's closing quote, its bytes from them on equal on both lanes (eight at
        /// a time where both lanes hold them); false where they differ or the bytes run out.
        func skipEqualStringTails() throws -> Bool {
            while true {
                guard try hasFirst(), try hasSecond(), let a = lanes.first.baseAddress,
                    let b = lanes.second.baseAddress
                else { return false }
                if i + 8 <= lanes.first.count, j + 8 <= lanes.second.count {
                    let x = UnsafeRawPointer(a + i).loadUnaligned(as: UInt64.self)
                    let y = UnsafeRawPointer(b + j).loadUnaligned(as: UInt64.self)
                    let marks = quotesOrBackslashes(in: UInt64(littleEndian: x))
                    let difference = UInt64(littleEndian: x ^ y)
                    let firstMark = marks == 0 ? 8 : marks.trailingZeroBitCount >> 3
                    let firstDifference = difference == 0 ? 8 : difference.trailingZeroBitCount >> 3
                    // The bytes before the first quote or backslash are equal, and that one too.
                    guard firstDifference > firstMark || firstDifference == 8 else { return false }
                    i += firstMark
                    j += firstMark
                    guard firstMark < 8 else { continue }
                } else {
                    guard a[i] == b[j] else { return false }
                    guard a[i] == UInt8(ascii: "\"") || a[i] == UInt8(ascii: "\\") else {
                        i += 1
                        j += 1
                        continue
                    }
                }
                if a[i] == UInt8(ascii: "\"") {
                    i += 1
                    j += 1
                    return true
                }
                // A backslash and the byte it escapes, which may be a quote.
                guard try hasFirst(2), try hasSecond(2), lanes.first[i + 1] == lanes.second[j + 1] else {
                    return false
                }
                i += 2
                j += 2
            }
        }
        // The bytes differ: the same tokens, with whitespace between them in the first text? The extent settled
        // the rest (no array, no priority or `.value`, the nodes counted), which equal bytes share.
        // After `{`, `,`, `:`, `}` or a string, whitespace lies between tokens; after a number's or a literal's
        // byte only where the token ends there (the other side's next byte ends it).
        var isBetweenTokens = true
        while j < extent.bytes {
            guard try hasFirst() else { return nil }
            let byte = lanes.first[i]
            if byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 {
                if !isBetweenTokens {
                    let next = lanes.second[j]
                    guard next == UInt8(ascii: ",") || next == UInt8(ascii: "}") || next == UInt8(ascii: ":") else {
                        return nil
                    }
                }
                i += 1
                continue
            }
            guard lanes.second[j] == byte else { return nil }
            i += 1
            j += 1
            switch byte {
            case UInt8(ascii: "\""):
                guard try skipEqualStringTails() else { return nil }
                isBetweenTokens = true
            case UInt8(ascii: "{"), UInt8(ascii: "}"), UInt8(ascii: ":"), UInt8(ascii: ","):
                isBetweenTokens = true
            default:
                isBetweenTokens = false
            }
        }
        first.skipObject(spanning: i)
        second.skipObject(spanning: j)
        return extent.nodes
    }

    /// The bytes of the object the reader's last token opened, to its closing brace, and the nodes it is (itself
    /// and every value in it), reading ahead as need be: what `skipEqualObjects` compares. Nil where the text
    /// is not compact (whitespace before a string), or the object holds an array or a key starting with "."
    /// (a priority, `.value`), or more bytes than the buffer holds. Eight bytes at a time to the next quote,
    /// backslash or bracket, as `skipContainerUnchecked` reads.
    private static func plainObjectExtent(_ reader: inout JSONReader) throws -> (bytes: Int, nodes: Int)? {
        var lane = reader.unconsumed
        var index = 0
        var depth = 1
        var keys = 0
        var isInString = false
        /// Whether byte `index + ahead` is read, reading ahead for it if need be.
        func has(_ ahead: Int) throws -> Bool {
            while index + ahead >= lane.count {
                guard try reader.readAhead() else { return false }
                lane = reader.unconsumed
            }
            return true
        }
        while try has(0) {
            guard let base = lane.baseAddress else { return nil }
            if index + 8 <= lane.count {
                let word = UInt64(littleEndian: UnsafeRawPointer(base + index).loadUnaligned(as: UInt64.self))
                let found = isInString ? quotesOrBackslashes(in: word) : quotesOrBrackets(in: word)
                guard found != 0 else {
                    index += 8
                    continue
                }
                index += found.trailingZeroBitCount >> 3
            }
            let byte = base[index]
            if isInString {
                if byte == UInt8(ascii: "\\") {
                    index += 2
                    continue
                }
                if byte == UInt8(ascii: "\"") { isInString = false }
            } else if byte == UInt8(ascii: "\"") {
                isInString = true
                // Compact text: a key's quote follows `{` or `,` (the object's own brace is before the lane).
                let before = index == 0 ? UInt8(ascii: "{") : base[index - 1]
                if before == UInt8(ascii: "{") || before == UInt8(ascii: ",") {
                    keys += 1
                    guard try has(1), lane[index + 1] != UInt8(ascii: ".") else { return nil }
                } else if before != UInt8(ascii: ":") {
                    return nil
                }
            } else if byte == UInt8(ascii: "{") {
                depth += 1
            } else if byte == UInt8(ascii: "}") {
                depth -= 1
                if depth == 0 { return (index + 1, 1 + keys) }
            } else if byte == UInt8(ascii: "[") || byte == UInt8(ascii: "]") {
                return nil
            }
            index += 1
        }
        return nil
    }
}
