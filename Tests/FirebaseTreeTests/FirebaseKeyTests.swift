import Foundation
import Testing
import TreeTestSupport

@testable import FirebaseTree

@Suite("Firebase keys")
struct FirebaseKeyTests {
    @Test func validKeysAndProblems() {
        #expect(FirebaseKey.problem(with: "-K9euzjFOpEFYT5lUZrh") == nil)
        #expect(FirebaseKey.problem(with: "Москва 🐈") == nil)
        #expect(FirebaseKey.problem(with: ".priority") == nil)
        #expect(FirebaseKey.problem(with: ".value") == nil)
        for bad in ["a.b", "a$", "#", "[x", "x]", "a/b", "tab\there", "\u{7F}", "", ".sv"] {
            #expect(FirebaseKey.problem(with: bad) != nil, "\(bad.debugDescription) should be refused")
        }
    }

    /// Every byte value at every offset of keys of 1 to 19 bytes, among letters or push-ID dashes: refused exactly
    /// when it is a control character or one of `#$./[]` (the word-at-a-time test lets nothing else through a slow
    /// path and misses nothing).
    @Test func everyByteValueIsJudgedAsOnItsOwn() {
        let forbidden = Set(Array(0x00...0x1F) + [0x7F] + Array("#$./[]".utf8))
        var misjudged: [String] = []
        for background in [UInt8(ascii: "a"), UInt8(ascii: "-")] {
            for length in 1...19 {
                for position in 0..<length {
                    for byte in UInt8.min...UInt8.max {
                        var key = [UInt8](repeating: background, count: length)
                        key[position] = byte
                        let isRefused = key.withUnsafeBufferPointer { FirebaseKey.problem(with: $0) } != nil
                        if isRefused != forbidden.contains(byte) {
                            misjudged.append("\(byte) at \(position)/\(length)")
                        }
                    }
                }
            }
        }
        #expect(misjudged.isEmpty, "\(misjudged.prefix(10))")
    }

    /// The check reads eight bytes at a time: a forbidden byte must be found at any offset, before, inside and
    /// after the whole words, and the bytes that are allowed beside them must not be refused.
    @Test func forbiddenBytesAreFoundAtEveryOffset() {
        let forbidden: [UInt8] = [0x00, 0x01, 0x1F, 0x7F] + Array("$#[]/".utf8)
        // Also behind a push ID's "-", which sends its word byte by byte.
        let letter = UInt8(ascii: "a"), dash = UInt8(ascii: "-")
        for (length, lead) in (1...19).map({ ($0, letter) }) + (2...19).map({ ($0, dash) }) {
            for position in (lead == dash ? 1 : 0)..<length {
                for byte in forbidden {
                    var key = [UInt8](repeating: UInt8(ascii: "a"), count: length)
                    key[0] = lead
                    key[position] = byte
                    let problem = key.withUnsafeBufferPointer { FirebaseKey.problem(with: $0) }
                    #expect(problem != nil, "byte \(byte) at \(position) of \(length)")
                }
                for byte in Array("-+0 ~ZÁ".utf8) + [0x20, 0x2F + 1, 0x5C, 0x5E, 0x7E, 0x80, 0xFF] {
                    var key = [UInt8](repeating: UInt8(ascii: "a"), count: length)
                    key[0] = lead
                    key[position] = byte
                    let problem = key.withUnsafeBufferPointer { FirebaseKey.problem(with: $0) }
                    #expect(problem == nil, "byte \(byte) at \(position) of \(length)")
                }
            }
        }
        #expect(FirebaseKey.problem(with: "-K9euzjFOpEFYT5l.UZrh") != nil)
    }

    @Test func aStringWithANulIsRefusedAtAnyOffset() {
        for length in 1...19 {
            for position in 0..<length {
                var text = [UInt8](repeating: UInt8(ascii: "x"), count: length)
                #expect(text.withUnsafeBufferPointer { FirebaseKey.problem(withString: $0) } == nil)
                text[position] = 0
                #expect(text.withUnsafeBufferPointer { FirebaseKey.problem(withString: $0) } != nil)
            }
        }
        #expect(FirebaseKey.problem(withString: "tab\tand é") == nil)
    }

    /// Errors show a path in at most a kilobyte, however deep or long: long keys keep their first bytes, a path
    /// still too long its first and last keys around a count of the rest; a short path is shown whole.
    @Test func pathsAreDescribedInAKilobyteAtMost() {
        #expect(FirebaseKey.describe(path: []) == "/")
        #expect(FirebaseKey.describe(path: ["users", "u1", "username"]) == "/users/u1/username")
        let deep = FirebaseKey.describe(path: Array(repeating: "0", count: 10_000))
        #expect(deep.hasPrefix("/0/0/0/") && deep.hasSuffix("/0/0/0"))
        #expect(deep.contains("…(") && deep.contains(" more)…"))
        let kept = deep.split(separator: "/").filter { $0 == "0" }.count
        #expect(deep.contains("…(\((10_000 - kept).formatted(.number.locale(Locale(identifier: "en_US")))) more)…"))
        #expect(deep.utf8.count <= FirebaseKey.describedPathBytes)
        let long = FirebaseKey.describe(path: ["a", String(repeating: "é", count: 5000), "b"])
        #expect(long.hasPrefix("/a/é") && long.hasSuffix("…/b"))
        #expect(long.utf8.count <= FirebaseKey.describedKeyBytes + 10)
        let both = FirebaseKey.describe(path: Array(repeating: String(repeating: "k", count: 2000), count: 40))
        #expect(both.utf8.count <= FirebaseKey.describedPathBytes && both.contains("more)…"))
    }

    @Test func integerKeysFollowTheSDK() {
        #expect(FirebaseKey.integerValue("0") == 0)
        #expect(FirebaseKey.integerValue("-5") == -5)
        #expect(FirebaseKey.integerValue("007") == 7)
        #expect(FirebaseKey.integerValue("0000000000012") == 12)  // leading zeros do not count toward 10 digits
        #expect(FirebaseKey.integerValue("2147483647") == Int32.max)
        #expect(FirebaseKey.integerValue("-2147483648") == Int32.min)
        #expect(FirebaseKey.integerValue("2147483648") == nil)
        #expect(FirebaseKey.integerValue("12345678901") == nil)
        #expect(FirebaseKey.integerValue("1.5") == nil)
        #expect(FirebaseKey.integerValue("-") == nil)
        #expect(FirebaseKey.integerValue("+1") == nil)
        #expect(FirebaseKey.arrayIndex("0") == 0)
        #expect(FirebaseKey.arrayIndex("12") == 12)
        #expect(FirebaseKey.arrayIndex("012") == nil)
        #expect(FirebaseKey.arrayIndex("-1") == nil)
    }

    /// The import's key tracker takes both orders of a key and the one before it from one pass; they must be
    /// what byte order and `compare` give, wherever the first difference falls (inside or after the eight-byte
    /// words it reads) and whatever the keys are: integers, push IDs, characters around U+E000.
    @Test func bothOrdersAtOnceAreTheTwoOrders() {
        let stems = [
            "", "0", "7", "007", "-5", "-K9euzjFOpEFYT5lUZrh", "2147483648", "12345678901", "a", "é", "😀",
            "\u{E000}", "\u{FFFD}", "abcdefgh", "abcdefghijklmnop",
        ]
        let tails = ["", "a", "b", "0", "9", "😀", "\u{E000}", "\u{FFFF}", "é", "-", "abcdefgh"]
        var keys: [String] = []
        for stem in stems { for tail in tails { keys.append(stem + tail) } }
        var compared = 0
        for a in keys {
            for b in keys {
                var (x, y) = (a, b)
                x.withUTF8 { x in
                    y.withUTF8 { y in
                        let both = FirebaseKey.compareInBothOrders(x, y)
                        let bytes = Array(x).lexicographicallyPrecedes(Array(y)) ? -1 : (Array(x) == Array(y) ? 0 : 1)
                        #expect(both.bytes == bytes, "\(a.debugDescription) \(b.debugDescription)")
                        #expect(both.rtdb == FirebaseKey.compare(x, y), "\(a.debugDescription) \(b.debugDescription)")
                        compared += 1
                    }
                }
            }
        }
        #expect(compared == keys.count * keys.count)
    }

    @Test func orderIsIntegersThenUTF16() {
        let sorted = [
            "-2147483648", "-5", "0", "7", "007", "12", "2147483647", "-K9x", "2147483648", "A", "_", "a",
            "z", "é", "😀", "\u{E000}", "\u{FFFD}",
        ]
        #expect(sorted.shuffled().sorted(by: FirebaseKey.precedes) == sorted)
    }

    @Test(arguments: 0..<200)
    func nonIntegerOrderEqualsUTF16CodeUnitOrder(seed: Int) {
        var generator = SeededGenerator(state: UInt64(seed))
        let alphabet: [Character] = ["a", "b", "Z", "é", "ж", "中", "\u{E000}", "\u{FFFD}", "😀", "𝄞", "-", " "]
        func key() -> String {
            String(
                (0..<Int.random(in: 1...4, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! })
        }
        let a = "k" + key(), b = "k" + key()
        let expected = a.utf16.lexicographicallyPrecedes(b.utf16)
        #expect(FirebaseKey.precedes(a, b) == expected, "\(a) vs \(b)")
    }
}

@Suite("JavaScript number text")
struct JavaScriptNumberTests {
    @Test func formatsAsJavaScriptDoes() {
        let cases: [(Double, String)] = [
            (4, "4"), (-0.0, "0"), (0, "0"), (1497918951.91262, "1497918951.91262"),
            (374.9999999999999, "374.9999999999999"),
            (1e21, "1e+21"), (1e20, "100000000000000000000"), (123e18, "123000000000000000000"), (5e-7, "5e-7"),
            (1e-6, "0.000001"), (1.5e-7, "1.5e-7"), (-2.5, "-2.5"), (0.1, "0.1"),
            (Double("9007199254740993")!, "9007199254740992"),
            (Double("5e-324")!, "5e-324"), (1.7976931348623157e308, "1.7976931348623157e+308"),
            (1454612114624, "1454612114624"),
            (1e15, "1000000000000000"), (-1e-7, "-1e-7"), (Double("123456789012345680000")!, "123456789012345680000"),
        ]
        for (value, text) in cases {
            #expect(JavaScriptNumber.format(value) == text, "\(value)")
        }
    }

    @Test func relaysOutDecimalText() {
        #expect(JavaScriptNumber.format(decimal: "1000000000000000000000") == "1e+21")
        #expect(JavaScriptNumber.format(decimal: "5E-07") == "5e-7")
        #expect(JavaScriptNumber.format(decimal: "0.50") == "0.5")
        #expect(JavaScriptNumber.format(decimal: "-0.0") == "0")
        #expect(JavaScriptNumber.format(decimal: "abc") == nil)
    }

    @Test(arguments: 0..<20)
    func roundTripsRandomDoubles(seed: Int) {
        var generator = SeededGenerator(state: UInt64(seed) &+ 77)
        for _ in 0..<500 {
            let value = Double(bitPattern: generator.next())
            guard value.isFinite else { continue }
            let text = JavaScriptNumber.format(value)
            #expect(Double(text) == (value == 0 ? 0 : value), "\(value) as \(text)")
        }
    }
}

@Suite("JSON text writer")
struct JSONTextWriterTests {
    private func write(_ value: TreeValue, _ options: JSONTextWriter.Options = .init()) -> String {
        var writer = JSONTextWriter(options: options)
        writer.value(value)
        writer.finish()
        return String(decoding: writer.bytes, as: UTF8.self)
    }

    @Test func escapesAsJSONStringify() {
        #expect(write(.string("a\"b\\c\n\t\u{1}\u{2028}é")) == #""a\"b\\c\n\t\u0001"# + "\u{2028}é\"")
    }

    @Test func arraysBySDKRule() {
        let dense = TreeValue.object(["0": .string("a"), "1": .string("b")])
        let holey = TreeValue.object(["0": .string("a"), "2": .string("c")])
        let sparse = TreeValue.object(["0": .string("a"), "5": .string("f")])
        #expect(write(dense) == #"["a","b"]"#)
        #expect(write(holey) == #"["a",null,"c"]"#)
        #expect(write(sparse) == #"{"0":"a","5":"f"}"#)
        #expect(write(dense, .init(rendersArrays: false)) == #"{"0":"a","1":"b"}"#)
    }

    @Test func prioritiesAndPrettyLayout() {
        let value = TreeValue.object([
            "b": .object([".value": .number(1), ".priority": .string("p")]),
            ".priority": .number(2), "a": .object(["0": .bool(true), "1": .bool(false)]),
        ])
        #expect(write(value) == #"{".priority":2,"a":[true,false],"b":{".value":1,".priority":"p"}}"#)
        #expect(write(value, .init(keepsPriorities: false)) == #"{"a":[true,false],"b":1}"#)
        #expect(
            write(value, .init(isPretty: true)) == """
                {
                  ".priority" : 2,
                  "a" : [ true, false ],
                  "b" : {
                    ".value" : 1,
                    ".priority" : "p"
                  }
                }

                """)
    }
}
