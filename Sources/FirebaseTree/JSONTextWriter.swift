import Foundation

/// Writes JSON text the way Firebase exports look: strings escaped as `JSON.stringify` does (non-ASCII as UTF-8),
/// numbers as JavaScript writes them, and with `pretty` the console's layout (two-space indents, `"key" : value`,
/// arrays on one line as `[ a, b ]`).
///
/// Bytes accumulate in `bytes`; the owner drains them (`drain(_:)`) as often as it likes, so memory stays
/// bounded however long the document.
public struct JSONTextWriter {
    /// Output options shared by `export` and `get`.
    public struct Options: Sendable, Equatable {
        /// Indent and space as the Firebase console's "Export JSON" does.
        public var isPretty: Bool
        /// Render integer-keyed objects as arrays by the SDKs' rule (the console's export); false for the REST
        /// API's `format=export`.
        public var rendersArrays: Bool
        /// Keep `.priority` (and `{".value", ".priority"}` leaves); false drops them as a plain REST `GET` does.
        public var keepsPriorities: Bool

        /// Options; the defaults give the console's "Export JSON" without its indentation.
        public init(isPretty: Bool = false, rendersArrays: Bool = true, keepsPriorities: Bool = true) {
            self.isPretty = isPretty
            self.rendersArrays = rendersArrays
            self.keepsPriorities = keepsPriorities
        }
    }

    private enum Container {
        case object(isFirst: Bool)
        case array(isFirst: Bool)
    }

    /// The options this writer applies.
    public let options: Options
    /// Written but not yet taken.
    public private(set) var bytes: [UInt8] = []
    private var containers: [Container] = []
    private var objectDepth = 0
    private var afterKey = false

    /// A writer with `options`.
    public init(options: Options = Options()) {
        self.options = options
        bytes.reserveCapacity(1 << 16)
    }

    /// A writer of values that will be copied into another writer's output inside `objectDepth` open objects,
    /// laid out (with `isPretty`) as they would be there.
    package init(options: Options, objectDepth: Int) {
        self.options = options
        self.objectDepth = objectDepth
    }

    /// How many objects enclose what is written next (the indentation level of a pretty layout).
    package var currentObjectDepth: Int { objectDepth }

    /// Lets `body` read what has been written, then clears it without giving up the buffer.
    public mutating func drain(_ body: (UnsafeBufferPointer<UInt8>) throws -> Void) rethrows {
        try bytes.withUnsafeBufferPointer { try body($0) }
        bytes.removeAll(keepingCapacity: true)
    }

    // MARK: Structure

    /// Opens an object as the next value.
    public mutating func beginObject() {
        beforeValue()
        bytes.append(UInt8(ascii: "{"))
        containers.append(.object(isFirst: true))
        objectDepth += 1
    }

    /// Closes the innermost object.
    public mutating func endObject() {
        guard case .object(let isFirst) = containers.removeLast() else { preconditionFailure("not in an object") }
        objectDepth -= 1
        if options.isPretty, !isFirst { newline() }
        bytes.append(UInt8(ascii: "}"))
    }

    /// Opens an array as the next value.
    public mutating func beginArray() {
        beforeValue()
        bytes.append(UInt8(ascii: "["))
        containers.append(.array(isFirst: true))
    }

    /// Closes the innermost array.
    public mutating func endArray() {
        guard case .array(let isFirst) = containers.removeLast() else { preconditionFailure("not in an array") }
        if options.isPretty, !isFirst { bytes.append(UInt8(ascii: " ")) }
        bytes.append(UInt8(ascii: "]"))
    }

    /// Writes the key of the next member of the innermost object.
    public mutating func key(_ key: String) {
        var key = key
        key.withUTF8 { self.key(utf8: $0) }
    }

    private mutating func beforeValue() {
        if afterKey {
            afterKey = false
            return
        }
        guard case .array(let isFirst) = containers.last else { return }
        if !isFirst { bytes.append(UInt8(ascii: ",")) }
        if options.isPretty { bytes.append(UInt8(ascii: " ")) }
        containers[containers.count - 1] = .array(isFirst: false)
    }

    private mutating func newline() {
        bytes.append(UInt8(ascii: "\n"))
        bytes.append(contentsOf: repeatElement(UInt8(ascii: " "), count: 2 * objectDepth))
    }

    /// Ends the document: a newline after a pretty one, as the console's files end.
    public mutating func finish() {
        if options.isPretty { bytes.append(UInt8(ascii: "\n")) }
    }

    // MARK: Scalars

    /// A string value.
    public mutating func string(_ value: String) {
        beforeValue()
        string(value, isKey: false)
    }

    /// A number value in JavaScript's notation.
    public mutating func number(_ value: Double) {
        beforeValue()
        bytes.append(contentsOf: JavaScriptNumber.format(value).utf8)
    }

    /// A key given as UTF-8.
    package mutating func key(utf8 key: UnsafeBufferPointer<UInt8>) {
        beginKey()
        Self.appendQuoted(key, to: &bytes)
        endKey()
    }

    /// A key that is plain ASCII needing no escapes (a field name), copied as it is.
    package mutating func key(_ key: StaticString) {
        key.withUTF8Buffer { self.key(plain: $0) }
    }

    /// A key of plain ASCII bytes needing no escapes (a field name), copied as it is.
    package mutating func key(plain key: UnsafeBufferPointer<UInt8>) {
        beginKey()
        bytes.append(UInt8(ascii: "\""))
        bytes.append(contentsOf: key)
        bytes.append(UInt8(ascii: "\""))
        endKey()
    }

    private mutating func beginKey() {
        guard case .object(let isFirst) = containers.last else { preconditionFailure("key outside an object") }
        if !isFirst {
            bytes.append(UInt8(ascii: ","))
        } else {
            containers[containers.count - 1] = .object(isFirst: false)
        }
        if options.isPretty { newline() }
    }

    private mutating func endKey() {
        if options.isPretty {
            bytes.append(UInt8(ascii: " "))
            bytes.append(UInt8(ascii: ":"))
            bytes.append(UInt8(ascii: " "))
        } else {
            bytes.append(UInt8(ascii: ":"))
        }
        afterKey = true
    }

    /// A string value given as UTF-8.
    package mutating func string(utf8 value: UnsafeBufferPointer<UInt8>) {
        beforeValue()
        Self.appendQuoted(value, to: &bytes)
    }

    /// A number given as PostgreSQL's text for a float8 or bigint (shortest round-trip digits), re-laid out as
    /// JavaScript writes it where the two differ: exponents, and `-0`.
    package mutating func number(postgresText text: UnsafeBufferPointer<UInt8>) {
        beforeValue()
        let needsLayout =
            text.contains(UInt8(ascii: "e"))
            || (text.count == 2 && text[0] == UInt8(ascii: "-")
                && text[1] == UInt8(ascii: "0"))
        if needsLayout, let laidOut = JavaScriptNumber.format(decimal: String(decoding: text, as: UTF8.self)) {
            bytes.append(contentsOf: laidOut.utf8)
        } else {
            bytes.append(contentsOf: text)
        }
    }

    /// Starts a value whose text the caller appends with `appendRaw`, as already written JSON.
    package mutating func beginRawValue() {
        beforeValue()
    }

    /// Appends JSON text as it is (a value begun with `beginRawValue`, in pieces).
    package mutating func appendRaw(_ text: UnsafeBufferPointer<UInt8>) {
        bytes.append(contentsOf: text)
    }

    /// Appends pretty-printed JSON text laid out one object deeper than where it lands: after each newline, two
    /// fewer spaces. `pendingSpaces` carries a cut between two pieces (start with 0).
    package mutating func appendRawOneLevelShallower(_ text: UnsafeBufferPointer<UInt8>, pendingSpaces: inout Int) {
        guard let base = text.baseAddress else { return }
        var index = 0
        while index < text.count {
            if pendingSpaces > 0 {
                if text[index] == UInt8(ascii: " ") {
                    pendingSpaces -= 1
                    index += 1
                    continue
                }
                pendingSpaces = 0
            }
            let rest = text.count - index
            let newline = memchr(base + index, Int32(UInt8(ascii: "\n")), rest)
            let stop =
                newline.map { $0.assumingMemoryBound(to: UInt8.self) - UnsafeMutablePointer(mutating: base) + 1 }
                ?? text.count
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: text[index..<stop]))
            index = stop
            if newline != nil { pendingSpaces = 2 }
        }
    }

    /// A boolean value.
    public mutating func bool(_ value: Bool) {
        beforeValue()
        bytes.append(contentsOf: (value ? "true" : "false").utf8)
    }

    /// `null`: the whole document when a path holds nothing, or a hole in an array.
    public mutating func null() {
        beforeValue()
        bytes.append(contentsOf: "null".utf8)
    }

    private mutating func string(_ value: String, isKey: Bool) {
        var value = value
        value.withUTF8 { Self.appendQuoted($0, to: &bytes) }
    }

    /// Appends `text` as a JSON string literal, escaped as `JSON.stringify` escapes.
    package static func appendQuoted(_ text: UnsafeBufferPointer<UInt8>, to bytes: inout [UInt8]) {
        if text.count > 1 << 16, bytes.capacity - bytes.count < text.count + 2 {
            // A long string (a photo in base64): room for exactly its escaped form, instead of doubling the buffer
            // (and holding old and new at once) as appending would.
            bytes.reserveCapacity(bytes.count + escapedCount(text) + 2)
        }
        bytes.append(UInt8(ascii: "\""))
        appendEscaped(text, to: &bytes)
        bytes.append(UInt8(ascii: "\""))
    }

    /// Appends `text` escaped as in a JSON string literal, without the quotes (a long string may be escaped
    /// piece by piece: escapes never span two bytes of the input).
    package static func appendEscaped(_ text: UnsafeBufferPointer<UInt8>, to bytes: inout [UInt8]) {
        guard let base = text.baseAddress else { return }
        var runStart = 0
        var index = 0
        let count = text.count
        while index < count {
            // Eight bytes at a time while none is a quote, a backslash or a control character (most text).
            if index + 8 <= count {
                let word = UnsafeRawPointer(base + index).loadUnaligned(as: UInt64.self)
                let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
                let quotes = word ^ (ones &* 0x22), backslashes = word ^ (ones &* 0x5C)
                // A byte's high bit ends up set when it is below 0x20 or equals one of the two (bytes of 0x80
                // and up are taken out: they are UTF-8, copied as they are).
                let special = ((word &- ones &* 0x20) | (quotes &- ones) | (backslashes &- ones)) & ~word & highs
                if special == 0 {
                    index += 8
                    continue
                }
            }
            let byte = text[index]
            guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else {
                index += 1
                continue
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: text[runStart..<index]))
            index += 1
            runStart = index
            bytes.append(UInt8(ascii: "\\"))
            if let letter = shortEscape(byte) {
                bytes.append(letter)
            } else {
                let hex: [UInt8] = Array("0123456789abcdef".utf8)
                bytes.append(contentsOf: [UInt8(ascii: "u"), 0x30, 0x30, hex[Int(byte >> 4)], hex[Int(byte & 0xF)]])
            }
        }
        bytes.append(contentsOf: UnsafeBufferPointer(rebasing: text[runStart...]))
    }

    /// How many bytes `appendEscaped` writes for `text`.
    private static func escapedCount(_ text: UnsafeBufferPointer<UInt8>) -> Int {
        var count = text.count
        for byte in text where byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") {
            count += shortEscape(byte) == nil ? 5 : 1
        }
        return count
    }

    /// The letter after the backslash for a byte with a two-character escape (`\n`); nil for the other control
    /// characters, written `\u00XX`.
    private static func shortEscape(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"): byte
        case 0x08: UInt8(ascii: "b")
        case 0x0C: UInt8(ascii: "f")
        case 0x0A: UInt8(ascii: "n")
        case 0x0D: UInt8(ascii: "r")
        case 0x09: UInt8(ascii: "t")
        default: nil
        }
    }

    // MARK: Trees

    /// Writes an in-memory subtree: keys in export order, arrays and priorities as the options say.
    public mutating func value(_ value: TreeValue) {
        switch value {
        case .string(let text): string(text)
        case .number(let number): self.number(number)
        case .bool(let flag): bool(flag)
        case .object(var children):
            if !options.keepsPriorities {
                if let leaf = children[FirebaseKey.value] { return self.value(leaf) }
                children[FirebaseKey.priority] = nil
            }
            if options.rendersArrays, let elements = Self.arrayElements(of: children) {
                beginArray()
                for element in elements {
                    if let element { self.value(element) } else { null() }
                }
                return endArray()
            }
            beginObject()
            for key in TreeValue.object(children).orderedKeys {
                guard let child = children[key] else { continue }
                self.key(key)
                self.value(child)
            }
            endObject()
        }
    }

    /// The elements, with nil in the holes, when the SDKs would render `children` as an array: every key is
    /// `0` or `[1-9][0-9]*` and the largest is less than twice the count.
    package static func arrayElements(of children: [TreeKey: TreeValue]) -> [TreeValue?]? {
        var maximum = -1
        for key in children.keys {
            guard let index = FirebaseKey.arrayIndex(key.string) else { return nil }
            maximum = max(maximum, index)
        }
        guard maximum >= 0, maximum < 2 * children.count else { return nil }
        var elements = [TreeValue?](repeating: nil, count: maximum + 1)
        for (key, value) in children {
            if let index = FirebaseKey.arrayIndex(key.string) { elements[index] = value }
        }
        return elements
    }
}
