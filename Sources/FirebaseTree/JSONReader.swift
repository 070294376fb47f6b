import Foundation

/// A streaming JSON reader: pulls one token at a time from a `ByteSource` through a bounded buffer, never holding
/// the document, and never recursing. It refuses nesting deeper than Firebase allows (`maximumNesting`) before
/// opening the container, so that nothing it or its callers keep per level (frames, paths, the recursion of a
/// comparison) can grow with the input: 300,000 levels of `[` fail at the 34th `[`, in the reader.
///
/// Tokens are zero-copy: a key's or string's UTF-8 is `text`, valid until the next call to `next()`. Strings are
/// validated as UTF-8 and unescaped; numbers are read as IEEE doubles (Firebase's only number type). Every error
/// names the byte offset, line, column and the path being read.
///
/// ```swift
/// var reader = JSONReader(source: MemorySource(#"{"users": {"u1": {"username": "ana"}}}"#))
/// while try reader.next() != .end {
///     if reader.token == .string { print(reader.pathDescription, reader.string) }   // /users/u1/username ana
/// }
/// ```
public struct JSONReader: ~Copyable {
    /// What `next()` found.
    public enum Token: UInt8, Sendable {
        case objectStart, objectEnd, arrayStart, arrayEnd, key, string, number, `true`, `false`, null, end
    }

    /// Where a token starts in the input.
    public struct Position: Sendable, Equatable, CustomStringConvertible {
        /// Bytes before it, from the start of the input (a byte-order mark included).
        public var offset: Int
        /// Its line, from 1.
        public var line: Int
        /// Its column in bytes, from 1.
        public var column: Int

        /// `byte 120 (line 4, column 7)`.
        public var description: String { "byte \(offset) (line \(line), column \(column))" }
    }

    private struct Frame {
        var isObject: Bool
        /// Where this frame's key (or index) starts in `pathBytes`.
        var pathStart: Int
        /// The array index of the current element, -1 before the first.
        var index: Int
    }

    private enum State {
        /// A value must come (top level, after `:`, after `,` in an array).
        case value
        /// First thing in an array: a value or `]`.
        case arrayFirst
        /// First thing in an object: a key or `}`.
        case objectFirst
        /// After `,` in an object: a key.
        case objectKey
        /// After a key: `:`.
        case colon
        /// After a value: `,`, the closing bracket, or the end of input at the top level.
        case afterValue
        /// The document has ended.
        case done
    }

    private var source: any ByteSource
    /// malloc'd, so that a long token grows it with realloc (in place, or by remapping pages) rather than a copy
    /// beside the old one.
    private var buffer: UnsafeMutablePointer<UInt8>
    private var capacity: Int
    /// The capacity asked for; a buffer that a long token grew shrinks back to it once the token is read.
    private let usualCapacity: Int
    private var cursor = 0
    private var limit = 0
    private var isAtEndOfInput = false
    /// Bytes dropped from the front of the buffer so far.
    private var discarded = 0
    private var linesDiscarded = 0
    private var lastLineStart = 0

    private var state = State.value
    private var hasStarted = false
    private var frames: [Frame] = []
    /// The keys of the open objects, each after a "/" (malloc'd: a key replaces the one before it at every
    /// child, which an array's generic range replacement made a tenth of the reader's work).
    private var pathBytes: UnsafeMutablePointer<UInt8>
    private var pathCount = 0
    private var pathCapacity = 1024
    /// Unescaped strings are assembled here; manual storage, so `text` may point into it until the next call.
    private var scratch: UnsafeMutablePointer<UInt8>
    private var scratchCount = 0
    private var scratchCapacity = 4096
    private var textStart: UnsafePointer<UInt8>?
    /// The key of the child `moveToNextChild()` moved to: at most `maximumKeyBytes` and "…", or an index.
    private let childKeyBytes = UnsafeMutablePointer<UInt8>.allocate(capacity: JSONReader.maximumKeyBytes + 32)
    private var childKeyCount = 0
    private var textCount = 0
    private var tokenOffset = 0
    private let maximumTokenBytes: Int
    /// How many objects and arrays may be open at once.
    private let maximumNesting: Int
    /// A string value longer than this keeps this many bytes and a few more (`isTextCut`).
    private let stringCutBytes: Int

    /// How many objects and arrays a Firebase tree opens at most: one for each of its 32 levels of keys, and one
    /// more for a leaf at the 32nd level written with its priority (`{".value": 1, ".priority": 2}`).
    public static let maximumNesting = FirebaseKey.maximumDepth + 1

    /// The last token `next()` returned.
    public private(set) var token = Token.end
    /// Whether the last `.key` was longer than `maximumKeyBytes`, or the last `.string` longer than the reader's
    /// `maximumStringBytes`: `text` holds its first bytes only (for a string, more than `maximumStringBytes`, so
    /// that a check of its length still finds it too long).
    public private(set) var isTextCut = false
    /// How much of a longer key a reader keeps: no key this long is valid (a path stops at 768 bytes), and
    /// reading one whole would cost its length in memory several times over.
    public static let maximumKeyBytes = 1024
    /// Whether `byte` is whitespace between JSON tokens (space, line feed, carriage return, tab).
    static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09
    }
    /// The value of the last `.number` token.
    public private(set) var number: Double = 0

    /// A reader over `source`. A number may be at most `maximumTokenBytes` long; a string longer than
    /// `maximumStringBytes` (Firebase's 10 MB) is read and checked but only its first bytes are kept (`isTextCut`),
    /// as a key's beyond `maximumKeyBytes`; at most `maximumNesting` objects and arrays may be open at once (more
    /// for a document that wraps a tree, such as a streamed event). So what the reader holds does not grow with the
    /// input. Positions count from `firstOffset` (negative to skip a wrapper the source adds before the document;
    /// see `NestedSource`); lines and columns count from offset 0.
    public init(
        source: some ByteSource, bufferSize: Int = 1 << 20, maximumTokenBytes: Int = 16 << 20,
        maximumStringBytes: Int = FirebaseKey.maximumStringBytes, maximumNesting: Int = JSONReader.maximumNesting,
        firstOffset: Int = 0
    ) {
        self.maximumNesting = maximumNesting
        // Four bytes more than the limit, so that a cut at a character's boundary still keeps more than it.
        stringCutBytes = maximumStringBytes > Int.max - 4 ? Int.max : maximumStringBytes + 4
        self.source = source
        discarded = firstOffset
        capacity = max(bufferSize, 64)
        usualCapacity = capacity
        guard let memory = malloc(capacity) else { fatalError("out of memory allocating the JSON buffer") }
        buffer = memory.assumingMemoryBound(to: UInt8.self)
        scratch = .allocate(capacity: scratchCapacity)
        self.maximumTokenBytes = maximumTokenBytes
        frames.reserveCapacity(min(maximumNesting, 64))
        guard let pathMemory = malloc(pathCapacity) else { fatalError("out of memory allocating the JSON path") }
        pathBytes = pathMemory.assumingMemoryBound(to: UInt8.self)
    }

    /// A reader of the rest of a file from the value at `position` on, which `source` gives after
    /// `prefixLength` bytes of its own that name the value's place (`NestedSource(…, isClosed: false)`):
    /// positions, lines and columns are the file's.
    public init(source: some ByteSource, resumingAt position: Position, prefixLength: Int) {
        self.init(source: source, firstOffset: position.offset - prefixLength)
        linesDiscarded = position.line - 1
        lastLineStart = position.offset - (position.column - 1)
    }

    deinit {
        free(buffer)
        free(pathBytes)
        scratch.deallocate()
        childKeyBytes.deallocate()
    }

    // MARK: Reading tokens

    /// The UTF-8 of the last `.key` or `.string` token, or the text of the last `.number` (`1e400`); valid until
    /// the next call to `next()`.
    public var text: UnsafeBufferPointer<UInt8> {
        UnsafeBufferPointer(start: textStart, count: textCount)
    }

    /// The last `.key` or `.string` token as a Swift string.
    public var string: String { String(decoding: text, as: UTF8.self) }

    /// How many objects and arrays are open.
    public var depth: Int { frames.count }

    /// Where the last token started.
    public var position: Position { position(ofOffset: tokenOffset) }

    /// Bytes consumed so far.
    public var bytesRead: Int { discarded + cursor }

    /// The offset of the current token's first byte.
    public var tokenStart: Int { tokenOffset }

    /// Reads the next token. After the document's last token it returns `.end`, and then `.end` again.
    @discardableResult
    public mutating func next() throws -> Token {
        if !hasStarted {
            hasStarted = true
            try skipByteOrderMark()
        }
        while true {
            guard let byte = try nextNonWhitespace() else {
                return try endOfInput()
            }
            tokenOffset = discarded + cursor
            switch state {
            case .value, .arrayFirst:
                if byte == UInt8(ascii: "]"), state == .arrayFirst {
                    return closeContainer(isObject: false)
                }
                if let frame = frames.last, !frame.isObject {
                    frames[frames.count - 1].index += 1
                }
                return try readValue(startingWith: byte)
            case .objectFirst, .objectKey:
                if byte == UInt8(ascii: "}"), state == .objectFirst {
                    return closeContainer(isObject: true)
                }
                guard byte == UInt8(ascii: "\"") else {
                    throw syntaxError(state == .objectFirst ? "expected a key or '}'" : "expected a key after ','")
                }
                try readString(isKey: true)
                pathCount = frames[frames.count - 1].pathStart + 1
                appendToPath(text)
                // The ':' is consumed by the next call, so that `text` stays valid until then.
                state = .colon
                token = .key
                return .key
            case .colon:
                guard byte == UInt8(ascii: ":") else { throw syntaxError("expected ':' after the key") }
                cursor += 1
                state = .value
                continue
            case .afterValue:
                guard let frame = frames.last else {
                    throw syntaxError("unexpected data after the end of the JSON document")
                }
                switch byte {
                case UInt8(ascii: ","):
                    cursor += 1
                    state = frame.isObject ? .objectKey : .value
                    continue
                case UInt8(ascii: "}") where frame.isObject:
                    return closeContainer(isObject: true)
                case UInt8(ascii: "]") where !frame.isObject:
                    return closeContainer(isObject: false)
                default:
                    throw syntaxError(
                        frame.isObject ? "expected ',' or '}' after a value" : "expected ',' or ']' after a value")
                }
            case .done:
                throw syntaxError("unexpected data after the end of the JSON document")
            }
        }
    }

    /// Moves to the next child of the object or array the reader is in, Firebase style: returns its key (an
    /// array element's index as text) with the reader on the child's first token, or nil at the container's end.
    public mutating func nextChild() throws -> String? {
        guard try moveToNextChild() else { return nil }
        return String(decoding: childKey, as: UTF8.self)
    }

    /// Moves to the next child as `nextChild()` does, without making its key a String (`childKey` holds it); false
    /// at the container's end.
    public mutating func moveToNextChild() throws -> Bool {
        switch try next() {
        case .objectEnd, .arrayEnd, .end:
            return false
        case .key:
            // A cut key says so: its first bytes and "…", as no key of the input (nor a valid one) is written.
            keepChildKey(text, isCut: isTextCut)
            try next()
        case .objectStart, .arrayStart:
            // The element opened a frame of its own; its index is in the array's frame below.
            keepChildKey(index: frames[frames.count - 2].index)
        default:
            keepChildKey(index: frames[frames.count - 1].index)
        }
        return true
    }

    /// The UTF-8 of the key of the child `moveToNextChild()` moved to (an array element's index as digits, a cut
    /// key's first bytes and "…"); valid until it moves to another child.
    public var childKey: UnsafeBufferPointer<UInt8> {
        UnsafeBufferPointer(start: childKeyBytes, count: childKeyCount)
    }

    private mutating func keepChildKey(_ key: UnsafeBufferPointer<UInt8>, isCut: Bool) {
        if let base = key.baseAddress { childKeyBytes.update(from: base, count: key.count) }
        childKeyCount = key.count
        guard isCut else { return }
        for byte in "…".utf8 {
            childKeyBytes[childKeyCount] = byte
            childKeyCount += 1
        }
    }

    private mutating func keepChildKey(index: Int) {
        // Digits from the last; an index is never negative.
        var value = index
        var digits = 0
        repeat {
            digits += 1
            value /= 10
        } while value > 0
        value = index
        for position in stride(from: digits - 1, through: 0, by: -1) {
            childKeyBytes[position] = UInt8(ascii: "0") + UInt8(value % 10)
            value /= 10
        }
        childKeyCount = digits
    }

    /// Skips the value that starts with the next token (a whole object or array, or one scalar).
    public mutating func skipValue() throws {
        let startDepth = depth
        repeat {
            let token = try next()
            if token == .end { return }
        } while depth > startDepth
    }

    /// Skips the rest of the object or array the last token opened, as `skipValue` does but without reading its
    /// tokens: brackets outside strings are counted, nothing is checked (keys, escapes, numbers, UTF-8). For a
    /// value another reader reads in full (a parallel import's node another session loads), at a fraction of the
    /// cost. A malformed value may end the skip in the wrong place, or at the end of the input.
    public mutating func skipContainerUnchecked() throws {
        precondition(token == .objectStart || token == .arrayStart, "the reader is on an opening bracket")
        var depth = 1
        var isInString = false
        var index = cursor
        while true {
            while index < limit {
                // Eight bytes at a time to the first that matters: in a string a quote or backslash, outside one a
                // quote or bracket (most of what a skip passes is strings, keys and the `":` and `,` between them).
                if index + 8 <= limit {
                    let word = UInt64(littleEndian: UnsafeRawPointer(buffer + index).loadUnaligned(as: UInt64.self))
                    let found = isInString ? Self.quotesOrBackslashes(in: word) : Self.quotesOrBrackets(in: word)
                    guard found != 0 else {
                        index += 8
                        continue
                    }
                    index += found.trailingZeroBitCount >> 3
                }
                let byte = buffer[index]
                if isInString {
                    if byte == UInt8(ascii: "\\") {
                        // The escaped byte may lie past the buffer's end: keep the backslash for the next refill.
                        guard index + 1 < limit else { break }
                        index += 2
                        continue
                    }
                    if byte == UInt8(ascii: "\"") { isInString = false }
                } else if byte == UInt8(ascii: "\"") {
                    isInString = true
                } else if byte == UInt8(ascii: "{") || byte == UInt8(ascii: "[") {
                    depth += 1
                } else if byte == UInt8(ascii: "}") || byte == UInt8(ascii: "]") {
                    depth -= 1
                    if depth == 0 {
                        cursor = index
                        _ = closeContainer(isObject: byte == UInt8(ascii: "}"))
                        return
                    }
                }
                index += 1
            }
            cursor = index
            guard try refill(keepingFrom: cursor) else {
                cursor = limit
                tokenOffset = discarded + cursor
                let open = frames.last.map { $0.isObject ? "an object" : "an array" } ?? "the document"
                throw syntaxError("unexpected end of input inside \(open): the file is truncated")
            }
            index = cursor
        }
    }

    /// The bytes read from the input but not consumed yet: what follows the last token. Valid until the reader
    /// moves or reads ahead.
    var unconsumed: UnsafeBufferPointer<UInt8> {
        UnsafeBufferPointer(start: buffer + cursor, count: limit - cursor)
    }

    /// Reads more of the input behind `unconsumed`, keeping its bytes (they may move in memory); false when nothing
    /// came: at the end of the input, or when the buffer is full of unconsumed bytes (a look ahead does not grow it).
    mutating func readAhead() throws -> Bool {
        guard cursor > 0 || limit < capacity else { return false }
        let before = limit - cursor
        return try refill(keepingFrom: cursor) && limit - cursor > before
    }

    /// Consumes the rest of the object the last token opened, which is the first `count` bytes of `unconsumed`
    /// (its closing brace the last of them), as `skipContainerUnchecked` does once it has found its end.
    mutating func skipObject(spanning count: Int) {
        precondition(token == .objectStart && count > 0 && count <= limit - cursor, "the object's bytes are read")
        precondition(buffer[cursor + count - 1] == UInt8(ascii: "}"), "the object ends with its last byte")
        cursor += count - 1
        tokenOffset = discarded + cursor
        _ = closeContainer(isObject: true)
    }

    /// Marks each byte of `word` equal to the byte that fills `repeated`, with its high bit: exact up to the first
    /// such byte (above it a borrow may mark others), which is all `trailingZeroBitCount` reads.
    @inline(__always)
    static func bytes(of word: UInt64, equalTo repeated: UInt64) -> UInt64 {
        let difference = word ^ repeated
        return (difference &- ones) & ~difference & highs
    }

    /// Marks the quotes and backslashes of `word` (little-endian: its lowest set bit is in its first one).
    @inline(__always)
    static func quotesOrBackslashes(in word: UInt64) -> UInt64 {
        bytes(of: word, equalTo: ones &* 0x22) | bytes(of: word, equalTo: ones &* 0x5C)
    }

    /// Marks the quotes and brackets of `word`: with bit 5 set, `[` and `]` read as `{` and `}`, and no other
    /// byte does.
    @inline(__always)
    static func quotesOrBrackets(in word: UInt64) -> UInt64 {
        let folded = word | ones &* 0x20
        return bytes(of: word, equalTo: ones &* 0x22) | bytes(of: folded, equalTo: ones &* 0x7B)
            | bytes(of: folded, equalTo: ones &* 0x7D)
    }

    private mutating func endOfInput() throws -> Token {
        tokenOffset = discarded + cursor
        switch state {
        case .done,
            .afterValue where frames.isEmpty:
            state = .done
            token = .end
            return .end
        case .value where frames.isEmpty:
            throw syntaxError("the input is empty: it holds no JSON value")
        default:
            let open = frames.last.map { $0.isObject ? "an object" : "an array" } ?? "the document"
            throw syntaxError("unexpected end of input inside \(open): the file is truncated")
        }
    }

    private mutating func readValue(startingWith byte: UInt8) throws -> Token {
        if byte == UInt8(ascii: "{") || byte == UInt8(ascii: "["), frames.count >= maximumNesting {
            throw nestingError()
        }
        switch byte {
        case UInt8(ascii: "{"):
            cursor += 1
            frames.append(Frame(isObject: true, pathStart: pathCount, index: -1))
            appendToPath(UInt8(ascii: "/"))
            state = .objectFirst
            token = .objectStart
        case UInt8(ascii: "["):
            cursor += 1
            frames.append(Frame(isObject: false, pathStart: pathCount, index: -1))
            state = .arrayFirst
            token = .arrayStart
        case UInt8(ascii: "\""):
            try readString(isKey: false)
            finishValue()
            token = .string
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            try readNumber()
            finishValue()
            token = .number
        case UInt8(ascii: "t"):
            try readLiteral("true")
            finishValue()
            token = .true
        case UInt8(ascii: "f"):
            try readLiteral("false")
            finishValue()
            token = .false
        case UInt8(ascii: "n"):
            try readLiteral("null")
            finishValue()
            token = .null
        default:
            throw syntaxError("expected a value, found \(Self.describe(byte))")
        }
        return token
    }

    private mutating func finishValue() {
        state = frames.isEmpty ? .done : .afterValue
    }

    private mutating func appendToPath(_ bytes: UnsafeBufferPointer<UInt8>) {
        reservePath(bytes.count)
        if let base = bytes.baseAddress { (pathBytes + pathCount).update(from: base, count: bytes.count) }
        pathCount += bytes.count
    }

    private mutating func appendToPath(_ byte: UInt8) {
        reservePath(1)
        pathBytes[pathCount] = byte
        pathCount += 1
    }

    private mutating func reservePath(_ extra: Int) {
        guard pathCount + extra > pathCapacity else { return }
        pathCapacity = max(pathCapacity * 2, pathCount + extra)
        guard let grown = realloc(pathBytes, pathCapacity) else { fatalError("out of memory growing the JSON path") }
        pathBytes = grown.assumingMemoryBound(to: UInt8.self)
    }

    private mutating func closeContainer(isObject: Bool) -> Token {
        cursor += 1
        let frame = frames.removeLast()
        pathCount = frame.pathStart
        finishValue()
        token = isObject ? .objectEnd : .arrayEnd
        return token
    }

    // MARK: The buffer

    /// The next byte that is not JSON whitespace, without consuming it; nil at the end of the input.
    @inline(__always)
    private mutating func nextNonWhitespace() throws -> UInt8? {
        while true {
            while cursor < limit {
                let byte = buffer[cursor]
                if byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 {
                    cursor += 1
                } else {
                    return byte
                }
            }
            guard try refill(keepingFrom: cursor) else { return nil }
        }
    }

    /// Drops the bytes before `keep`, reads more, and returns whether any arrived. Indices into the buffer held by
    /// the caller must be moved down by the returned shift (`keep`), which `cursor` and `limit` already are.
    @discardableResult
    private mutating func refill(keepingFrom keep: Int) throws -> Bool {
        guard !isAtEndOfInput else { return false }
        if keep > 0 {
            countLines(upTo: keep)
            memmove(buffer, buffer + keep, limit - keep)
            discarded += keep
            cursor -= keep
            limit -= keep
        }
        if limit == capacity {
            guard capacity < maximumTokenBytes else {
                throw syntaxError("a single value is longer than \(Self.describe(bytes: maximumTokenBytes))")
            }
            // By a quarter, not double: a 10 MB string needs at most 12.5 MB here (realloc remaps large blocks,
            // so the many steps cost no copies).
            resize(to: min(capacity + capacity / 4, maximumTokenBytes))
        } else if capacity > usualCapacity, limit <= usualCapacity / 2 {
            resize(to: usualCapacity)
        }
        let count = try source.read(into: UnsafeMutableRawBufferPointer(start: buffer + limit, count: capacity - limit))
        if count == 0 {
            isAtEndOfInput = true
            return false
        }
        limit += count
        return true
    }

    private mutating func resize(to newCapacity: Int) {
        guard let resized = realloc(buffer, newCapacity) else { fatalError("out of memory growing the JSON buffer") }
        buffer = resized.assumingMemoryBound(to: UInt8.self)
        capacity = newCapacity
    }

    /// A leading UTF-8 byte-order mark is not part of the document.
    private mutating func skipByteOrderMark() throws {
        var index = 0
        var anchor = 0
        if try ensure(3, at: &index, anchor: &anchor), buffer[0] == 0xEF, buffer[1] == 0xBB, buffer[2] == 0xBF {
            cursor = 3
        }
    }

    /// Makes `count` bytes from `index` available, keeping everything from `anchor`; moves both down if the buffer
    /// shifted. Returns false when the input ends first.
    @inline(__always)
    private mutating func ensure(_ count: Int, at index: inout Int, anchor: inout Int) throws -> Bool {
        while index + count > limit {
            let shift = anchor
            let oldCursor = cursor
            cursor = anchor
            let arrived = try refill(keepingFrom: anchor)
            cursor = oldCursor - shift
            index -= shift
            anchor = 0
            if !arrived { return index + count <= limit }
        }
        return true
    }

    private mutating func countLines(upTo end: Int) {
        var searched = 0
        while searched < end, let found = memchr(buffer + searched, 0x0A, end - searched) {
            let index = UnsafeMutableRawPointer(buffer).distance(to: found)
            linesDiscarded += 1
            lastLineStart = discarded + index + 1
            searched = index + 1
        }
    }

    private func position(ofOffset offset: Int) -> Position {
        var line = linesDiscarded + 1
        var lineStart = lastLineStart
        var index = 0
        let end = min(max(0, offset - discarded), limit)
        while index < end {
            if buffer[index] == 0x0A {
                line += 1
                lineStart = discarded + index + 1
            }
            index += 1
        }
        return Position(offset: offset, line: line, column: offset - lineStart + 1)
    }

    // MARK: Strings

    static let ones: UInt64 = 0x0101_0101_0101_0101
    private static let highs: UInt64 = 0x8080_8080_8080_8080

    /// Reads a string whose opening quote is at `cursor`; `text` is its unescaped UTF-8. A key longer than
    /// `maximumKeyBytes`, or a value longer than `maximumStringBytes`, keeps only its first bytes (`isTextCut`).
    private mutating func readString(isKey: Bool) throws {
        var start = cursor + 1
        var index = start
        isTextCut = false
        let cutBytes = isKey ? Self.maximumKeyBytes : stringCutBytes
        while true {
            // Eight plain ASCII bytes at a time: none a quote, a backslash, a control character or non-ASCII.
            while index + 8 <= limit {
                let word = UnsafeRawPointer(buffer + index).loadUnaligned(as: UInt64.self)
                let quotes = word ^ (Self.ones &* 0x22)
                let backslashes = word ^ (Self.ones &* 0x5C)
                let special =
                    ((word &- Self.ones &* 0x20) | (quotes &- Self.ones) | (backslashes &- Self.ones)
                        | word) & Self.highs
                if special != 0 {
                    // Straight to the first special byte (the lowest flag is exact: a borrow only flags bytes
                    // above one that is special itself), not byte by byte through the plain ones before it.
                    index += UInt64(littleEndian: special).trailingZeroBitCount / 8
                    break
                }
                index += 8
            }
            if index - start > cutBytes {
                scratchCount = 0
                appendToScratch(UnsafeBufferPointer(start: buffer + start, count: cutBytes + 1))
                return try readRestOfLongText(at: &index, keeping: cutBytes)
            }
            guard try ensure(1, at: &index, anchor: &start) else {
                throw syntaxError("unexpected end of input inside a string: the file is truncated")
            }
            let byte = buffer[index]
            if byte == UInt8(ascii: "\"") {
                textStart = UnsafePointer(buffer + start)
                textCount = index - start
                cursor = index + 1
                return
            } else if byte == UInt8(ascii: "\\") {
                return try readEscapedString(from: start, at: index, cutBytes: cutBytes)
            } else {
                try skipUnescaped(byte, at: &index, anchor: &start)
            }
        }
    }

    /// The rest of a string that contains escapes, decoded into `scratch`; the input before `index` is not kept
    /// (it is in `scratch`), so that an escaped string costs its decoded bytes, not twice as many.
    private mutating func readEscapedString(from first: Int, at escapeIndex: Int, cutBytes: Int) throws {
        scratchCount = 0
        appendToScratch(UnsafeBufferPointer(start: buffer + first, count: escapeIndex - first))
        var index = escapeIndex
        while true {
            if scratchCount > cutBytes { return try readRestOfLongText(at: &index, keeping: cutBytes) }
            var start = index
            guard try ensure(1, at: &index, anchor: &start) else {
                throw syntaxError("unexpected end of input inside a string: the file is truncated")
            }
            let byte = buffer[index]
            switch byte {
            case UInt8(ascii: "\""):
                cursor = index + 1
                textStart = UnsafePointer(scratch)
                textCount = scratchCount
                return
            case UInt8(ascii: "\\"):
                guard try ensure(2, at: &index, anchor: &start) else {
                    throw syntaxError("unexpected end of input inside a string: the file is truncated")
                }
                let escaped = buffer[index + 1]
                index += 2
                switch escaped {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): appendToScratch(escaped)
                case UInt8(ascii: "b"): appendToScratch(0x08)
                case UInt8(ascii: "f"): appendToScratch(0x0C)
                case UInt8(ascii: "n"): appendToScratch(0x0A)
                case UInt8(ascii: "r"): appendToScratch(0x0D)
                case UInt8(ascii: "t"): appendToScratch(0x09)
                case UInt8(ascii: "u"): try readUnicodeEscape(at: &index, anchor: &start)
                default:
                    throw syntaxError("invalid escape \\\(Self.describe(escaped)) in a string", at: index - 2)
                }
            default:
                if byte < 0x20 {
                    throw syntaxError(
                        "a control character (\(Self.describe(byte))) must be escaped in a string", at: index)
                }
                let length = byte < 0x80 ? 1 : try validateUTF8Sequence(at: &index, anchor: &start)
                appendToScratch(UnsafeBufferPointer(start: buffer + index, count: length))
                index += length
            }
        }
    }

    /// Reads the rest of a key or string longer than `limit`, whose first bytes (more than that) are in
    /// `scratch`: they are cut to `limit` at a character's boundary and kept, the rest is read and validated
    /// without being kept, so that a key or string of 1 GB costs no more memory than one at the limit. No such key
    /// or string is valid in Firebase (a path stops at 768 bytes, a string at 10 MB): its first bytes name it in a
    /// reject.
    private mutating func readRestOfLongText(at index: inout Int, keeping limit: Int) throws {
        var kept = limit
        while kept > 0, UTF8.isContinuation(scratch[kept]) { kept -= 1 }
        while true {
            scratchCount = kept
            var start = index  // nothing before `index` is needed again
            guard try ensure(1, at: &index, anchor: &start) else {
                throw syntaxError("unexpected end of input inside a string: the file is truncated")
            }
            let byte = buffer[index]
            if byte == UInt8(ascii: "\"") {
                cursor = index + 1
                textStart = UnsafePointer(scratch)
                textCount = scratchCount
                isTextCut = true
                return
            } else if byte == UInt8(ascii: "\\") {
                guard try ensure(2, at: &index, anchor: &start) else {
                    throw syntaxError("unexpected end of input inside a string: the file is truncated")
                }
                let escaped = buffer[index + 1]
                index += 2
                switch escaped {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
                    UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                    break
                case UInt8(ascii: "u"): try readUnicodeEscape(at: &index, anchor: &start)
                default: throw syntaxError("invalid escape \\\(Self.describe(escaped)) in a string", at: index - 2)
                }
            } else {
                try skipUnescaped(byte, at: &index, anchor: &start)
            }
        }
    }

    /// Moves past the string's byte at `index`, neither a quote nor a backslash: a control character is
    /// refused, a non-ASCII byte must start a valid UTF-8 sequence.
    @inline(__always)
    private mutating func skipUnescaped(_ byte: UInt8, at index: inout Int, anchor: inout Int) throws {
        if byte < 0x20 {
            throw syntaxError("a control character (\(Self.describe(byte))) must be escaped in a string", at: index)
        } else if byte < 0x80 {
            index += 1
        } else {
            index += try validateUTF8Sequence(at: &index, anchor: &anchor)
        }
    }

    /// `\uXXXX` (the `\u` already consumed), with a following low surrogate for characters beyond the BMP.
    private mutating func readUnicodeEscape(at index: inout Int, anchor: inout Int) throws {
        // An offset in the input, not the buffer: reading on may shift the buffer (found by fuzzing).
        let escapeOffset = discarded + index - 2
        var escapeStart: Int { escapeOffset - discarded }
        var scalar = try readHex4(at: &index, anchor: &anchor, escapeOffset: escapeOffset)
        if (0xD800...0xDBFF).contains(scalar) {
            guard try ensure(6, at: &index, anchor: &anchor), buffer[index] == UInt8(ascii: "\\"),
                buffer[index + 1] == UInt8(ascii: "u")
            else {
                throw syntaxError(
                    "a \\u escape of a high surrogate must be followed by a low surrogate", at: escapeStart)
            }
            index += 2
            let low = try readHex4(at: &index, anchor: &anchor, escapeOffset: escapeOffset)
            guard (0xDC00...0xDFFF).contains(low) else {
                throw syntaxError(
                    "a \\u escape of a high surrogate must be followed by a low surrogate", at: escapeStart)
            }
            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
        } else if (0xDC00...0xDFFF).contains(scalar) {
            throw syntaxError("a lone low surrogate \\u escape cannot be UTF-8", at: escapeStart)
        }
        // Surrogates were joined or refused above, so the value is a scalar.
        guard let decoded = Unicode.Scalar(scalar) else {
            throw syntaxError("a \\u escape that is no Unicode scalar", at: escapeStart)
        }
        var encoded = [UInt8]()
        UTF8.encode(decoded) { encoded.append($0) }
        encoded.withUnsafeBufferPointer { appendToScratch($0) }
    }

    private mutating func appendToScratch(_ byte: UInt8) {
        withUnsafePointer(to: byte) { appendToScratch(UnsafeBufferPointer(start: $0, count: 1)) }
    }

    private mutating func appendToScratch(_ bytes: UnsafeBufferPointer<UInt8>) {
        if scratchCount + bytes.count > scratchCapacity {
            let capacity = max(scratchCapacity * 2, scratchCount + bytes.count)
            let larger = UnsafeMutablePointer<UInt8>.allocate(capacity: capacity)
            larger.update(from: scratch, count: scratchCount)
            scratch.deallocate()
            scratch = larger
            scratchCapacity = capacity
        }
        guard let base = bytes.baseAddress else { return }
        (scratch + scratchCount).update(from: base, count: bytes.count)
        scratchCount += bytes.count
    }

    private mutating func readHex4(at index: inout Int, anchor: inout Int, escapeOffset: Int) throws -> UInt32 {
        guard try ensure(4, at: &index, anchor: &anchor) else {
            throw syntaxError("unexpected end of input inside a \\u escape: the file is truncated")
        }
        var value: UInt32 = 0
        for offset in 0..<4 {
            let byte = buffer[index + offset]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw syntaxError("a \\u escape needs four hexadecimal digits", at: escapeOffset - discarded)
            }
            value = value << 4 | UInt32(digit)
        }
        index += 4
        return value
    }

    /// Checks the multi-byte UTF-8 sequence at `index` (RFC 3629: no overlongs, no surrogates, at most U+10FFFF)
    /// and returns its length.
    private mutating func validateUTF8Sequence(at index: inout Int, anchor: inout Int) throws -> Int {
        let lead = buffer[index]
        let length: Int
        var secondRange: ClosedRange<UInt8> = 0x80...0xBF
        switch lead {
        case 0xC2...0xDF: length = 2
        case 0xE0: length = 3; secondRange = 0xA0...0xBF
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED: length = 3; secondRange = 0x80...0x9F
        case 0xF0: length = 4; secondRange = 0x90...0xBF
        case 0xF1...0xF3: length = 4
        case 0xF4: length = 4; secondRange = 0x80...0x8F
        default: throw syntaxError("invalid UTF-8 (byte \(Self.hex(lead)))", at: index)
        }
        guard try ensure(length, at: &index, anchor: &anchor) else {
            throw syntaxError("invalid UTF-8: a sequence is cut off by the end of the input", at: index)
        }
        guard secondRange.contains(buffer[index + 1]) else {
            throw syntaxError("invalid UTF-8 (bytes \(Self.hex(lead)) \(Self.hex(buffer[index + 1])))", at: index)
        }
        for offset in 2..<length where !(0x80...0xBF).contains(buffer[index + offset]) {
            throw syntaxError("invalid UTF-8 (a truncated sequence at byte \(Self.hex(lead)))", at: index)
        }
        return length
    }

    // MARK: Numbers and literals

    /// A number per RFC 8259's grammar, read as the nearest double.
    private mutating func readNumber() throws {
        var start = cursor
        var index = cursor
        while true {
            while index < limit {
                switch buffer[index] {
                case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "+"), UInt8(ascii: "."),
                    UInt8(ascii: "e"), UInt8(ascii: "E"):
                    index += 1
                    continue
                default: break
                }
                break
            }
            if index < limit { break }
            guard try ensure(1, at: &index, anchor: &start) else { break }
        }
        let digits = UnsafeBufferPointer(start: buffer + start, count: index - start)
        guard let value = Self.parseNumber(digits) else {
            throw syntaxError("invalid number \"\(String(decoding: digits.prefix(40), as: UTF8.self))\"", at: start)
        }
        number = value
        textStart = UnsafePointer(buffer + start)
        textCount = index - start
        cursor = index
    }

    /// The double a JSON number denotes, or nil when the text breaks JSON's number grammar.
    package static func parseNumber(_ digits: UnsafeBufferPointer<UInt8>) -> Double? {
        var index = 0
        let count = digits.count
        let isNegative = count > 0 && digits[0] == UInt8(ascii: "-")
        if isNegative { index += 1 }
        // The digits as an integer while it stays at most 2^53 (`fits`), and the power of ten it is scaled by.
        var mantissa: UInt64 = 0
        var fits = true
        var scale = 0
        func isDigit(_ byte: UInt8) -> Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) }
        func add(_ byte: UInt8) {
            let next = mantissa &* 10 &+ UInt64(byte &- UInt8(ascii: "0"))
            if mantissa > Self.exactMantissa / 10 || next > Self.exactMantissa { fits = false } else { mantissa = next }
        }
        let integerStart = index
        while index < count, isDigit(digits[index]) {
            if fits { add(digits[index]) } else { scale += 1 }
            index += 1
        }
        let integerDigits = index - integerStart
        guard integerDigits > 0, !(integerDigits > 1 && digits[integerStart] == UInt8(ascii: "0")) else { return nil }
        if index < count, digits[index] == UInt8(ascii: ".") {
            index += 1
            let fractionStart = index
            while index < count, isDigit(digits[index]) {
                if fits {
                    add(digits[index])
                    scale -= 1
                }
                index += 1
            }
            guard index > fractionStart else { return nil }
        }
        if index < count, digits[index] == UInt8(ascii: "e") || digits[index] == UInt8(ascii: "E") {
            index += 1
            var sign = 1
            if index < count, digits[index] == UInt8(ascii: "+") || digits[index] == UInt8(ascii: "-") {
                if digits[index] == UInt8(ascii: "-") { sign = -1 }
                index += 1
            }
            let exponentStart = index
            var exponent = 0
            while index < count, isDigit(digits[index]) {
                // Past six digits the exponent is far outside a double's: the slow path says what it is.
                if index - exponentStart < 6 {
                    exponent = exponent * 10 + Int(digits[index] - UInt8(ascii: "0"))
                } else {
                    fits = false
                }
                index += 1
            }
            guard index > exponentStart else { return nil }
            scale += sign * exponent
        }
        guard index == count else { return nil }
        if fits, (-22...22).contains(scale) {
            // Clinger's fast path: the digits and the power of ten are both exact doubles, and one multiplication
            // or division rounds correctly.
            let value =
                scale >= 0 ? Double(mantissa) * Self.powersOfTen[scale] : Double(mantissa) / Self.powersOfTen[-scale]
            return isNegative ? -value : value
        }
        // Correctly rounded, locale-independent conversion.
        return Double(String(decoding: digits, as: UTF8.self))
    }

    /// Every integer up to this one is a double exactly.
    private static let exactMantissa: UInt64 = 1 << 53
    /// The powers of ten that are exact doubles.
    private static let powersOfTen: [Double] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18,
        1e19, 1e20, 1e21, 1e22,
    ]

    private mutating func readLiteral(_ literal: StaticString) throws {
        var start = cursor
        var index = cursor
        let length = literal.utf8CodeUnitCount
        let matches =
            try ensure(length, at: &index, anchor: &start)
            && (0..<length).allSatisfy { buffer[index + $0] == literal.utf8Start[$0] }
        guard matches else {
            throw syntaxError("invalid literal (expected \(literal))", at: index)
        }
        cursor = index + length
    }

    // MARK: Errors

    /// The path of the last token, Firebase style: `/users/uid_1/username`, array elements by index.
    public var path: [String] {
        var components: [String] = []
        for (position, frame) in frames.enumerated() {
            if frame.isObject {
                let end = position + 1 < frames.count ? frames[position + 1].pathStart : pathCount
                guard end > frame.pathStart + 1 else { break }
                let key = UnsafeBufferPointer(start: pathBytes + frame.pathStart + 1, count: end - frame.pathStart - 1)
                components.append(String(decoding: key, as: UTF8.self))
            } else {
                guard frame.index >= 0 else { break }
                components.append(String(frame.index))
            }
        }
        return components
    }

    /// `path` joined as a Firebase path (`/` for the root), shortened as errors show paths
    /// (`FirebaseKey.describe(path:)`).
    public var pathDescription: String { FirebaseKey.describe(path: path) }

    /// The error for a container that would open more than `maximumNesting` levels.
    private func nestingError() -> TreeError {
        let position = position(ofOffset: tokenOffset)
        return TreeError(
            .malformedInput, "a value at \(position) is \(FirebaseKey.tooDeep)", position: position,
            path: pathDescription)
    }

    private func syntaxError(_ message: String, at index: Int? = nil) -> TreeError {
        let offset = index.map { discarded + $0 } ?? tokenOffset
        let position = position(ofOffset: offset)
        return TreeError(
            .malformedInput, "malformed JSON at \(position): \(message)", position: position, path: pathDescription)
    }

    /// `64 MB`, `512 KB`, `100 bytes`.
    private static func describe(bytes: Int) -> String {
        bytes >= 1 << 20 && bytes % (1 << 20) == 0
            ? "\(bytes >> 20) MB" : bytes >= 1 << 10 && bytes % (1 << 10) == 0 ? "\(bytes >> 10) KB" : "\(bytes) bytes"
    }

    private static func describe(_ byte: UInt8) -> String {
        (0x21...0x7E).contains(byte) ? "'\(Character(Unicode.Scalar(byte)))'" : "byte \(hex(byte))"
    }

    private static func hex(_ byte: UInt8) -> String {
        "0x" + (byte < 0x10 ? "0" : "") + String(byte, radix: 16, uppercase: true)
    }
}
