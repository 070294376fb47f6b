import Foundation
import Testing
import TreeTestSupport

@testable import FirebaseTree

/// A parsed JSON value, for comparing the reader with Foundation.
indirect enum JSONValue: Equatable {
    case object([String: JSONValue])
    case array([JSONValue])
    case string(String)
    case number(Double)
    case bool(Bool)
    case null

    /// Reads one whole document through the streaming reader.
    static func read(_ reader: consuming JSONReader) throws -> JSONValue {
        var stack: [(isObject: Bool, key: String?, object: [String: JSONValue], array: [JSONValue])] = []
        var pendingKey: String?
        var result: JSONValue?
        func emit(_ value: JSONValue) {
            guard !stack.isEmpty else { result = value; return }
            if stack[stack.count - 1].isObject {
                stack[stack.count - 1].object[pendingKey!] = value
            } else {
                stack[stack.count - 1].array.append(value)
            }
        }
        while true {
            switch try reader.next() {
            case .objectStart: stack.append((true, pendingKey, [:], []))
            case .arrayStart: stack.append((false, pendingKey, [:], []))
            case .objectEnd, .arrayEnd:
                let frame = stack.removeLast()
                pendingKey = frame.key
                emit(frame.isObject ? .object(frame.object) : .array(frame.array))
            case .key: pendingKey = reader.string
            case .string: emit(.string(reader.string))
            case .number: emit(.number(reader.number))
            case .true: emit(.bool(true))
            case .false: emit(.bool(false))
            case .null: emit(.null)
            case .end: return result!
            }
        }
    }

    /// Converts Foundation's parse.
    init(foundation value: Any) {
        switch value {
        case let dictionary as [String: Any]: self = .object(dictionary.mapValues(JSONValue.init(foundation:)))
        case let array as [Any]: self = .array(array.map(JSONValue.init(foundation:)))
        case let string as String: self = .string(string)
        case let number as NSNumber where String(describing: type(of: number)).contains("Boolean"):
            self = .bool(number.boolValue)
        case let number as NSNumber: self = .number(number.doubleValue)
        default: self = .null
        }
    }
}

func readAll(_ text: String, chunkSize: Int = .max, bufferSize: Int = 1 << 20) throws -> JSONValue {
    try JSONValue.read(JSONReader(source: MemorySource(text, chunkSize: chunkSize), bufferSize: bufferSize))
}

func readError(_ bytes: [UInt8], chunkSize: Int = .max) -> TreeError? {
    do {
        _ = try JSONValue.read(JSONReader(source: MemorySource(bytes, chunkSize: chunkSize), bufferSize: 64))
        return nil
    } catch {
        return error as? TreeError
    }
}

/// Random JSON documents with the shapes exports have (nesting, unicode, escapes, integer-like keys, extreme
/// numbers), and their text written with random whitespace and escape styles.
struct RandomJSON {
    var generator: SeededGenerator

    mutating func int(_ range: ClosedRange<Int>) -> Int { Int.random(in: range, using: &generator) }

    mutating func string() -> String {
        let pieces = [
            "a", "Z", "0", "007", "-K9euzjFOpEFYT5lUZrh", " ", "\"", "\\", "/", "\n", "\t", "\u{1}", "é",
            "日本", "😀", "ñandú", "\u{7F}", "\u{FEFF}", "'; DROP TABLE users; --", "\u{10FFFF}", "\u{0}",
        ]
        return (0..<int(0...6)).map { _ in pieces[int(0...(pieces.count - 1))] }.joined()
    }

    mutating func number() -> Double {
        switch int(0...5) {
        case 0: return Double(int(-1000...1000))
        case 1: return Double.random(in: -1e6...1e6, using: &generator)
        case 2: return 1497918951.91262
        case 3:
            return [Double("5e-324")!, 1.7976931348623157e308, 374.9999999999999, 0.1, 1e21, -2.5e-8, -0.0][int(0...6)]
        case 4: return Double(int(0...Int(Int32.max)))
        default:
            return Double(
                bitPattern: UInt64.random(in: 0x0010_0000_0000_0000...0x7FE0_0000_0000_0000, using: &generator))
        }
    }

    mutating func value(depth: Int) -> JSONValue {
        switch depth > 6 ? int(0...3) : int(0...5) {
        case 0: return .string(string())
        case 1: return .number(number())
        case 2: return .bool(int(0...1) == 0)
        case 3: return .null
        case 4:
            var object: [String: JSONValue] = [:]
            for _ in 0..<int(0...5) { object[string() + String(int(0...99))] = value(depth: depth + 1) }
            return .object(object)
        default: return .array((0..<int(0...5)).map { _ in value(depth: depth + 1) })
        }
    }

    mutating func whitespace() -> String {
        ["", "", " ", "\n", "\r\n\t  "][int(0...4)]
    }

    mutating func text(_ value: JSONValue) -> String {
        switch value {
        case .object(let members):
            let body = members.map {
                whitespace() + quoted($0.key) + whitespace() + ":" + whitespace() + text($0.value)
            }
            return "{" + body.joined(separator: ",") + whitespace() + "}"
        case .array(let elements):
            return "[" + elements.map { whitespace() + text($0) }.joined(separator: ",") + whitespace() + "]"
        case .string(let string): return quoted(string)
        case .number(let number):
            let plain = number.description
            return int(0...3) == 0 && plain.contains("e") ? plain.replacingOccurrences(of: "e", with: "E") : plain
        case .bool(let bool): return bool ? "true" : "false"
        case .null: return "null"
        }
    }

    /// Escapes what JSON requires, and otherwise randomly: raw UTF-8, `\uXXXX`, surrogate pairs, `\/`.
    mutating func quoted(_ string: String) -> String {
        var result = "\""
        for scalar in string.unicodeScalars {
            let mustEscape = scalar == "\"" || scalar == "\\" || scalar.value < 0x20
            if mustEscape || int(0...4) == 0 {
                if scalar.value > 0xFFFF {
                    let value = scalar.value - 0x10000
                    result += String(format: "\\u%04x\\u%04X", 0xD800 + (value >> 10), 0xDC00 + (value & 0x3FF))
                } else if scalar == "\"" || scalar == "\\" || scalar == "/" {
                    result += "\\" + String(scalar)
                } else if scalar == "\n" && int(0...1) == 0 {
                    result += "\\n"
                } else {
                    result += String(format: "\\u%04x", scalar.value)
                }
            } else {
                result.unicodeScalars.append(scalar)
            }
        }
        return result + "\""
    }
}

@Suite("Streaming JSON reader")
struct JSONReaderTests {
    @Test func childrenByKeyOrIndex() throws {
        var reader = JSONReader(source: MemorySource(#"{"a": ["x", {"b": 1}, [2], null], "c": true}"#))
        try reader.next()
        var seen: [String] = []
        while let key = try reader.nextChild() {
            seen.append("\(key) \(reader.token)")
            if reader.token == .arrayStart {
                while let index = try reader.nextChild() {
                    seen.append("\(key)/\(index) \(reader.token)")
                    if reader.token == .objectStart || reader.token == .arrayStart {
                        while try reader.nextChild() != nil {}  // their children are scalars
                    }
                }
            }
        }
        #expect(seen == ["a arrayStart", "a/0 string", "a/1 objectStart", "a/2 arrayStart", "a/3 null", "c true"])
    }

    /// A key longer than any valid one keeps its first kilobyte (at a character's boundary) and says it was cut;
    /// the rest is read and checked, not kept, whatever the buffer size and escapes; strings stay whole.
    @Test(arguments: [64, 4096, 1 << 20])
    func aLongKeyIsCutNotHeld(bufferSize: Int) throws {
        let long = String(repeating: "é", count: 3 << 20) + "z"  // 6 MB of two-byte characters
        let escaped = String(repeating: #"\u00e9"#, count: 3000) + #"\n"#
        let json = #"{"\#(long)": 1, "\#(escaped)": "\#(long)", "b\u00e9": [true]}"#
        var reader = JSONReader(source: MemorySource(json, chunkSize: 1000), bufferSize: bufferSize)
        try reader.next()
        let first = try #require(try reader.nextChild())
        #expect(first.hasSuffix("…") && first.utf8.count <= JSONReader.maximumKeyBytes + 3)
        #expect(first.dropLast().allSatisfy { $0 == "é" } && first.utf8.count > 1000)
        #expect(reader.token == .number && reader.number == 1)
        let second = try #require(try reader.nextChild())
        #expect(second.hasSuffix("…") && second.dropLast().allSatisfy { $0 == "é" })
        #expect(reader.token == .string && reader.text.count == long.utf8.count)
        #expect(try reader.nextChild() == "bé")
        #expect(reader.isTextCut == false)
        #expect(throws: TreeError.self) {
            var broken = JSONReader(source: MemorySource(#"{""# + String(repeating: "k", count: 5000) + "\u{1}\": 1}"))
            try broken.next()
            _ = try broken.nextChild()
        }
    }

    @Test func tokensAndPaths() throws {
        var reader = JSONReader(source: MemorySource(#"{"users": {"u1": {"username": "ana", "tags": ["x", 2]}}}"#))
        var seen: [String] = []
        while try reader.next() != .end {
            switch reader.token {
            case .key: seen.append("key \(reader.string) at \(reader.pathDescription)")
            case .string: seen.append("string \(reader.string) at \(reader.pathDescription)")
            case .number: seen.append("number \(reader.number) at \(reader.pathDescription)")
            default: break
            }
        }
        #expect(
            seen == [
                "key users at /users", "key u1 at /users/u1", "key username at /users/u1/username",
                "string ana at /users/u1/username", "key tags at /users/u1/tags", "string x at /users/u1/tags/0",
                "number 2.0 at /users/u1/tags/1",
            ])
        #expect(try reader.next() == .end)
    }

    @Test(arguments: [1, 2, 3, 7, 64, 4096, Int.max])
    func readsRandomDocumentsExactly(chunkSize: Int) throws {
        var random = RandomJSON(generator: SeededGenerator(state: UInt64(chunkSize % 1000)))
        for _ in 0..<60 {
            let document = JSONValue.object(["root": random.value(depth: 0)])
            let text = random.whitespace() + random.text(document) + random.whitespace()
            let read = try JSONValue.read(JSONReader(source: MemorySource(text, chunkSize: chunkSize), bufferSize: 64))
            #expect(read == document, "\(text)")
        }
    }

    /// Found by the fuzzer: an error inside a \u escape read across a buffer refill named the wrong offset.
    @Test func errorsInEscapesNameTheSameOffsetWhateverTheBufferSize() throws {
        for (text, offset) in [
            (#"{"users": {"u1": {"name": "abc\ud800x"}}}"#, 30), (#"{"key": "some text \u12G4"}"#, 19),
            (#"{"key": "some text \udc00"}"#, 19), (#"{"k": "\ud83d\u0041 and more"}"#, 7),
        ] {
            for bufferSize in [4, 5, 7, 11, 16, 29, 1 << 20] {
                var reader = JSONReader(source: MemorySource(text), bufferSize: bufferSize)
                var failure: TreeError?
                do {
                    while try reader.next() != .end {}
                } catch let error as TreeError {
                    failure = error
                }
                #expect(
                    failure?.position?.offset == offset,
                    "\(text) with a \(bufferSize)-byte buffer: \(String(describing: failure))")
            }
        }
    }

    /// Strings are read eight plain bytes at a time, then straight to the first byte that is not plain: an escape,
    /// a quote, UTF-8 of two to four bytes or a control character must be found at any offset of a word, as a key
    /// and as a value, with the buffer's end anywhere near it.
    @Test(arguments: [64, 1 << 20])
    func aStringsFirstSpecialByteIsFoundAtEveryOffset(bufferSize: Int) throws {
        let specials: [(json: String, text: String)] = [
            (#"\n"#, "\n"), (#"\""#, "\""), (#"\\"#, "\\"), (#"\u00e9"#, "é"), ("é", "é"), ("日", "日"), ("😀", "😀"),
            ("\u{7F}", "\u{7F}"),
        ]
        for length in 0...20 {
            for position in 0...length {
                let before = String(repeating: "a", count: position)
                let after = String(repeating: "b", count: length - position)
                for special in specials {
                    let text = before + special.text + after
                    let json =
                        #"{""# + before + special.json + after + #"": ""# + before + special.json + after + #""}"#
                    #expect(
                        try readAll(json, bufferSize: bufferSize) == .object([text: .string(text)]),
                        "\(json) with a \(bufferSize)-byte buffer")
                }
                let control =
                    Array(#"{"k": ""#.utf8) + Array(before.utf8) + [0x01] + Array(after.utf8) + Array(#""}"#.utf8)
                let failure = readError(control)
                #expect(failure?.position?.offset == 7 + position, "a control character at \(position) of \(length)")
            }
        }
    }

    @Test func escapesAndUnicode() throws {
        #expect(
            try readAll(#"["a\"b\\c\/d\b\f\n\r\t", "\u00e9\u65E5", "\ud83d\ude00", "raw 😀 ñ"]"#, chunkSize: 1)
                == .array([.string("a\"b\\c/d\u{8}\u{C}\n\r\t"), .string("é日"), .string("😀"), .string("raw 😀 ñ")]))
        #expect(try readAll(#""\u0000""#) == .string("\u{0}"))
    }

    @Test func scalarsAndWhitespace() throws {
        #expect(try readAll(" \n\t 42 \r\n") == .number(42))
        #expect(try readAll("true") == .bool(true))
        #expect(try readAll("[false, null, {}, []]") == .array([.bool(false), .null, .object([:]), .array([])]))
    }

    @Test func numbersAreDoublesExactly() throws {
        let cases: [(String, Double)] = [
            ("0", 0), ("-0", -0.0), ("1497918951.91262", 1497918951.91262), ("4.9e-324", Double("4.9e-324")!),
            ("1.7976931348623157e308", 1.7976931348623157e308),
            ("18446744073709551617", Double("18446744073709551617")!),
            ("374.9999999999999", 374.9999999999999), ("1E2", 100), ("1e+2", 100), ("-12.5e-1", -1.25),
            ("999999999999999", 999999999999999), ("9007199254740993", Double("9007199254740993")!),
        ]
        for (text, value) in cases {
            guard case .number(let read) = try readAll("[\(text)]", chunkSize: 1).arrayElements[0] else {
                Issue.record("\(text) is not a number"); continue
            }
            #expect(read.bitPattern == value.bitPattern, "\(text) read as \(read)")
        }
        guard case .number(let huge) = try readAll("1e400") else { Issue.record("not a number"); return }
        #expect(huge == .infinity)
    }

    @Test(arguments: 0..<4)
    func numbersOfEveryShapeAreTheCorrectlyRoundedDouble(seed: Int) {
        // The reader's fast path (digits and a power of ten, both exact) beside strtod's correctly rounded
        // conversion, on numbers drawn around its limits: 2^53 as digits, powers of ten from 1e-22 to 1e22, many
        // fraction digits, leading zeros, exponents that move the point either way.
        var random = SeededGenerator(state: UInt64(seed) &+ 0x5EED)
        for _ in 0..<20_000 {
            var text = Bool.random(using: &random) ? "-" : ""
            let integer = [
                "0", String(UInt64.random(in: 1...9_999, using: &random)),
                String(UInt64.random(in: 9_007_199_254_740_000...9_007_199_254_741_000, using: &random)),
                String(UInt64.random(in: 1...UInt64.max, using: &random)),
            ].randomElement(using: &random)!
            text += integer
            if Bool.random(using: &random) {
                let zeros = String(repeating: "0", count: Int.random(in: 0...3, using: &random))
                text +=
                    "." + zeros
                    + String(
                        UInt64.random(
                            in: 0...UInt64(1) << Int.random(in: 1...60, using: &random),
                            using: &random))
            }
            if Bool.random(using: &random) {
                text += ["e", "E", "e+", "e-", "E-"].randomElement(using: &random)!
                text += String(Int.random(in: 0...30, using: &random))
            }
            let expected = Double(text)!
            let read = Array(text.utf8).withUnsafeBufferPointer { JSONReader.parseNumber($0) }
            #expect(read?.bitPattern == expected.bitPattern, "\(text) read as \(String(describing: read))")
        }
    }

    @Test(arguments: ["01", "-", "1.", ".5", "+1", "1e", "1e+", "--1", "1.2.3", "0x10", "NaN", "Infinity", "1-2"])
    func invalidNumbersAreErrors(text: String) {
        let error = readError(Array("[\(text)]".utf8))
        #expect(error?.kind == .malformedInput, "\(text) was accepted")
    }

    @Test func errorsNameOffsetLineColumnAndPath() throws {
        let text = "{\n  \"posts\": {\n    \"u1\": [1, 2,, 3]\n  }\n}"
        let error = try #require(readError(Array(text.utf8), chunkSize: 5))
        #expect(error.kind == .malformedInput)
        #expect(error.position == JSONReader.Position(offset: 31, line: 3, column: 17))
        #expect(error.message.contains("byte 31 (line 3, column 17)"))
        #expect(error.path == "/posts/u1/2")
    }

    @Test func truncatedEmptyAndTrailingGarbage() throws {
        #expect(readError(Array(#"{"a": [1, 2"#.utf8))?.message.contains("truncated") == true)
        #expect(readError(Array(#"{"a": "unterminated"#.utf8))?.message.contains("truncated") == true)
        #expect(readError(Array(#"{"a""#.utf8)) != nil)
        #expect(readError([])?.message.contains("empty") == true)
        #expect(readError(Array("  \n ".utf8))?.message.contains("empty") == true)
        #expect(readError(Array("{} {}".utf8))?.message.contains("after the end") == true)
        #expect(readError(Array(#"{"a": 1,}"#.utf8)) != nil)
        #expect(readError(Array(#"{"a" 1}"#.utf8))?.message.contains("':'") == true)
        #expect(readError(Array(#"[1 2]"#.utf8))?.message.contains("','") == true)
        #expect(readError(Array(#"{"a": tru}"#.utf8))?.message.contains("literal") == true)
        #expect(readError(Array("[\"tab\tinside\"]".utf8))?.message.contains("control character") == true)
        #expect(readError(Array(#"["\x"]"#.utf8))?.message.contains("invalid escape") == true)
    }

    @Test func aByteOrderMarkIsSkipped() throws {
        #expect(
            try JSONValue.read(
                JSONReader(source: MemorySource([0xEF, 0xBB, 0xBF] + Array(#"{"a":1}"#.utf8), chunkSize: 1)))
                == .object(["a": .number(1)]))
    }

    @Test(
        arguments: [
            [0xC0, 0x80], [0xE0, 0x80, 0x80], [0xED, 0xA0, 0x80], [0xF5, 0x80, 0x80, 0x80], [0x80], [0xFF],
            [0xF4, 0x90, 0x80, 0x80], [0xE2, 0x82], [0xC3],
        ] as [[UInt8]])
    func invalidUTF8IsAnError(sequence: [UInt8]) {
        let error = readError(Array("[\"ok ".utf8) + sequence + Array(" more\"]".utf8))
        #expect(error?.message.contains("UTF-8") == true)
        let atEnd = readError(Array("[\"ok ".utf8) + sequence)
        #expect(atEnd?.kind == .malformedInput)
    }

    @Test func loneSurrogateEscapesAreErrors() {
        #expect(readError(Array(#"["\ud800"]"#.utf8))?.message.contains("surrogate") == true)
        #expect(readError(Array(#"["\udc00"]"#.utf8))?.message.contains("surrogate") == true)
        #expect(readError(Array(#"["\ud800\u0041"]"#.utf8))?.message.contains("surrogate") == true)
    }

    @Test func deepNestingNeedsNoRecursion() throws {
        let depth = 100_000
        let text = String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
        var reader = JSONReader(source: MemorySource(text, chunkSize: 4096), maximumNesting: depth)
        var maximum = 0
        while try reader.next() != .end { maximum = max(maximum, reader.depth) }
        #expect(maximum == depth)
        let truncated = String(repeating: "{\"a\":", count: depth)
        var unlimited = JSONReader(source: MemorySource(truncated, chunkSize: 4096), maximumNesting: depth)
        #expect(throws: TreeError.self) { while try unlimited.next() != .end {} }
    }

    /// Past Firebase's 32 levels the reader refuses the next container before it opens it, whatever follows: an
    /// unterminated bomb, a leaf far down, objects or arrays. A leaf with its priority at the 32nd level is a
    /// Firebase tree, and reads.
    @Test(arguments: [
        String(repeating: "[", count: 300_000) + "1" + String(repeating: "]", count: 300_000),
        String(repeating: "[", count: 1 << 20),
        String(repeating: #"{"a":"#, count: 200_000),
        String(repeating: #"{"a":"#, count: 100_000) + "1" + String(repeating: "}", count: 100_000),
    ])
    func nestingPastFirebasesLevelsIsRefusedAtOnce(text: String) throws {
        var reader = JSONReader(source: MemorySource(text, chunkSize: 4096))
        var maximum = 0
        let error = #expect(throws: TreeError.self) {
            while try reader.next() != .end { maximum = max(maximum, reader.depth) }
        }
        #expect(maximum == JSONReader.maximumNesting)
        #expect(error?.message.contains("deeper than Firebase's 32 levels") == true)
        #expect(error?.position?.offset ?? .max < 200)
        #expect((error?.description.utf8.count ?? .max) < 400)

        var leafPath = ""
        for level in 1...32 { leafPath += #"{"k\#(level)":"# }
        let deepest = leafPath + #"{".value":1,".priority":2}"# + String(repeating: "}", count: 32)
        var fits = JSONReader(source: MemorySource(deepest))
        while try fits.next() != .end {}
        var tooDeep = JSONReader(
            source: MemorySource(leafPath + #"{"k33":{"k34":1}}"# + String(repeating: "}", count: 32)))
        #expect(throws: TreeError.self) { while try tooDeep.next() != .end {} }
    }

    @Test func longStringsCrossManyRefills() throws {
        let big = String(repeating: "ab\"😀\\\n", count: 3_000_000)
        let data = try JSONSerialization.data(withJSONObject: ["k": big])
        var reader = JSONReader(
            source: MemorySource(Array(data), chunkSize: 65536), bufferSize: 65536, maximumStringBytes: .max)
        #expect(try reader.next() == .objectStart)
        #expect(try reader.next() == .key)
        #expect(try reader.next() == .string)
        #expect(reader.string == big)
        #expect(try reader.next() == .objectEnd)
        // Beyond the reader's limit on strings, it keeps their first bytes only (more than the limit, at a
        // character's boundary), however they are escaped.
        var cut = JSONReader(
            source: MemorySource(Array(data), chunkSize: 65536), bufferSize: 65536,
            maximumStringBytes: 1 << 20)
        #expect(try cut.next() == .objectStart)
        #expect(try cut.next() == .key)
        #expect(try cut.next() == .string)
        #expect(cut.isTextCut && cut.text.count > 1 << 20 && cut.text.count <= (1 << 20) + 4)
        #expect(big.utf8.starts(with: cut.text))
        #expect(try cut.next() == .objectEnd)
        #expect(throws: TreeError.self) {
            try JSONValue.read(
                JSONReader(
                    source: MemorySource("[" + String(repeating: "1", count: 2 << 20) + "]"), bufferSize: 65536,
                    maximumTokenBytes: 1 << 20))
        }
    }

    @Test func skipValueSkipsWholeSubtrees() throws {
        var reader = JSONReader(source: MemorySource(#"{"skip": {"a": [1, {"b": 2}]}, "keep": "yes"}"#))
        #expect(try reader.next() == .objectStart)
        #expect(try reader.next() == .key)
        try reader.skipValue()
        #expect(try reader.next() == .key)
        #expect(reader.string == "keep")
        #expect(try reader.next() == .string)
        #expect(reader.bytesRead == 44)
    }

    /// Strings made to trip a skip that counts brackets: brackets, quotes and backslashes inside them, escapes
    /// across the eight-byte words the skip reads strings by, and across refills of a small buffer.
    static func trickyString(_ random: inout SeededGenerator) -> String {
        let pieces = ["{", "}", "[", "]", "\\\"", "\\\\", "\\u005b", ",", ":", "é", "😀", "x", "abcdefgh", " "]
        return "\""
            + (0..<Int.random(in: 0...24, using: &random)).map { _ in pieces.randomElement(using: &random)! }
            .joined() + "\""
    }

    static func trickyValue(_ random: inout SeededGenerator, depth: Int = 0) -> String {
        switch depth > 3 ? 0 : Int.random(in: 0...3, using: &random) {
        case 0: return trickyString(&random)
        case 1: return String(Int.random(in: -100...100, using: &random))
        case 2:
            return "{"
                + (0..<Int.random(in: 0...4, using: &random)).map { _ in
                    trickyString(&random) + ":" + trickyValue(&random, depth: depth + 1)
                }.joined(separator: ",") + "}"
        default:
            return "["
                + (0..<Int.random(in: 0...4, using: &random)).map { _ in trickyValue(&random, depth: depth + 1) }
                .joined(separator: ", ") + "]"
        }
    }

    @Test(arguments: [64, 67, 4096])
    func skippingAContainerUncheckedEndsWhereReadingItDoes(bufferSize: Int) throws {
        var random = SeededGenerator(state: UInt64(bufferSize))
        for _ in 0..<200 {
            let children = (0..<Int.random(in: 1...6, using: &random)).map { index in
                "\"k\(index)\": " + Self.trickyValue(&random)
            }
            let text = "{" + children.joined(separator: ", ") + "}"
            var skipping = JSONReader(source: MemorySource(text, chunkSize: 13), bufferSize: bufferSize)
            var reading = JSONReader(source: MemorySource(text, chunkSize: 13), bufferSize: bufferSize)
            #expect(try skipping.next() == .objectStart && reading.next() == .objectStart)
            while let key = try skipping.nextChild() {
                #expect(try reading.nextChild() == key)
                if skipping.token == JSONReader.Token.objectStart || skipping.token == JSONReader.Token.arrayStart {
                    try skipping.skipContainerUnchecked()
                    // Read to the container's end, token by token.
                    let depth = reading.depth
                    while reading.depth >= depth { try reading.next() }
                }
                #expect(skipping.bytesRead == reading.bytesRead, "\(text)")
            }
            #expect(try reading.nextChild() == nil)
            #expect(try skipping.next() == .end && reading.next() == .end)
        }
    }
}

extension JSONValue {
    var arrayElements: [JSONValue] {
        if case .array(let elements) = self { return elements }
        return []
    }
}
