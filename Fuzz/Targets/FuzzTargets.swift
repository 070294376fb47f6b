import FirebaseTree
import Foundation
import Storage

/// What the fuzzers run on each input: every reader of bytes the console has, and the property each must keep. A
/// property that fails traps, for libFuzzer to report; errors thrown for bad input are the expected outcome.
///
/// - `reader`: the streaming JSON reader, with large and tiny buffers, which must agree token for token.
/// - `mapping`: the import's mapping without a database, whole and nested under `--at`; a tree it takes whole
///   writes back through `JSONTextWriter` as the same tree.
/// - `comparison`: `verify`'s comparison of the input with itself (sorted first when its keys are out of order):
///   differences come in RTDB order of path, and none at all when nothing was rejected.
/// - `sync`: `sync`'s comparison of the input with a small store, planning what to write: each node to write comes
///   after the one before in RTDB order and not below it, and its text is JSON.
/// - `sorter`: `TreeSorter` puts every object's keys in RTDB order (a one-pass comparison of its output with itself
///   never finds them out of order) and keeps the tree.
/// - `writes`: the write verbs' reading of their JSON (`set`, `update`, `push`).
/// - `history`: the reading of `check --history`'s recorded entries.
/// - `gzip`: a `.gz` file's decompression, whatever the bytes (at most 4 MB of output read).
///
/// `FUZZ_TARGET=name` runs one of them (Fuzz/run.sh passes it on); otherwise every one runs.
public enum FuzzTargets {
    /// The targets by name, in the order `run` runs them.
    public static let all: [(name: String, run: @Sendable ([UInt8]) -> Void)] = [
        ("reader", reader), ("mapping", mapping), ("comparison", comparison), ("sync", sync), ("sorter", sorter),
        ("writes", writes), ("history", history), ("gzip", gzip),
    ]

    /// The target `FUZZ_TARGET` names, read once.
    private static let selected = ProcessInfo.processInfo.environment["FUZZ_TARGET"]

    /// Runs every target (or the one `FUZZ_TARGET` names) on one input.
    public static func run(_ data: UnsafeBufferPointer<UInt8>) {
        let bytes = Array(data)
        for target in all where selected == nil || selected == target.name { target.run(bytes) }
    }

    // MARK: Seeds

    /// Inputs of shapes a mutating fuzzer seldom reaches from small seeds, most of them past its size cap: nesting
    /// far past Firebase's 32 levels (closed, unclosed, under a leaf), a megabyte of `[`, wide objects in and out
    /// of order, strings just past 10 MB plain and escaped, a long key, a long number, a gzip bomb. `scale` 1
    /// gives the nesting and widths the hostile corpus was written with; a smaller scale, smaller ones (strings
    /// stay past Firebase's limit).
    public static func structuralSeeds(scale: Double = 1) -> [(name: String, bytes: [UInt8])] {
        func count(_ n: Int) -> Int { max(1, Int(Double(n) * scale)) }
        func text(_ string: String) -> [UInt8] { Array(string.utf8) }
        var wide = "{"
        for index in stride(from: count(100_000), to: 0, by: -1) {
            wide += (wide.count > 1 ? "," : "") + "\"k\(index)\":\(index)"
        }
        wide += "}"
        var sortedWide = #"{"users":{"#
        for index in 0..<count(50_000) { sortedWide += (index > 0 ? "," : "") + #""u\#(index)":{"username":"n"}"# }
        sortedWide += "}}"
        let long = String(repeating: "x", count: (10 << 20) + 1000)
        return [
            (
                "deep-closed",
                text(
                    String(repeating: "[", count: count(300_000)) + "1" + String(repeating: "]", count: count(300_000)))
            ),
            ("deep-open", text(String(repeating: "[", count: count(1 << 20)))),
            ("deep-objects-open", text(String(repeating: #"{"a":"#, count: count(200_000)))),
            (
                "deep-leaf",
                text(
                    String(repeating: #"{"a":"#, count: count(100_000)) + "1"
                        + String(repeating: "}", count: count(100_000)))
            ),
            ("deep-under-posts", text(#"{"posts":{"u":{"p":"# + String(repeating: "[", count: count(50_000)))),
            ("wide-unsorted", text(wide)),
            ("wide-records", text(sortedWide)),
            ("string-over-10-mb", text(#"{"users":{"u":{"username":""# + long + #""}}}"#)),
            ("escaped-string-over-10-mb", text(#"{"a":"\n\u00e9"# + long + #""}"#)),
            ("key-of-a-megabyte", text(#"{""# + String(long.prefix(count(1 << 20))) + #"":1}"#)),
            ("number-of-a-megabyte", text(#"{"a":1"# + String(repeating: "0", count: count(1 << 20)) + "}")),
            ("gzip-bomb", gzipped(Array(repeating: UInt8(ascii: "["), count: count(16 << 20)))),
        ]
    }

    /// `bytes` as a gzip file.
    private static func gzipped(_ bytes: [UInt8]) -> [UInt8] {
        nonisolated(unsafe) var output: [UInt8] = []
        guard let writer = try? GzipWriter(sink: { output += $0 }) else { return [] }
        try? bytes.withUnsafeBufferPointer { try writer.write($0) }
        try? writer.finish()
        return output
    }

    // MARK: The JSON reader and the import's mapping

    static func reader(_ bytes: [UInt8]) {
        let whole = tokens(of: bytes, bufferSize: 1 << 20)
        // A tiny buffer makes every token cross a refill; the reader must see exactly the same document.
        let bufferSize = 4 + Int(bytes.first ?? 0) % 29
        let pieces = tokens(of: bytes, bufferSize: bufferSize)
        if whole != pieces {
            let index =
                zip(whole, pieces).enumerated().first { $0.element.0 != $0.element.1 }?.offset
                ?? min(whole.count, pieces.count)
            let seen = index < whole.count ? whole[index] : "(nothing)"
            let small = index < pieces.count ? pieces[index] : "(nothing)"
            preconditionFailure(
                "the reader depends on its buffer size: token \(index) is \(seen), with \(bufferSize) bytes \(small)")
        }
    }

    /// The tokens, their text and the error (as its message and offset) of reading the whole input.
    static func tokens(of bytes: [UInt8], bufferSize: Int) -> [String] {
        var reader = JSONReader(
            source: MemorySource(bytes), bufferSize: bufferSize, maximumTokenBytes: 1 << 20,
            maximumStringBytes: 1 << 16)
        var seen: [String] = []
        do {
            while true {
                let token = try reader.next()
                let value =
                    switch token {
                    case .key, .string: reader.string + (reader.isTextCut ? " (cut)" : "")
                    case .number: String(reader.number)
                    default: ""
                    }
                precondition(reader.depth <= JSONReader.maximumNesting, "the reader nested past its limit")
                seen.append("\(token) \(value) @\(reader.tokenStart) depth \(reader.depth)")
                if token == .end { break }
            }
        } catch {
            let message = String(describing: error)
            precondition(message.utf8.count < 4096, "an error of \(message.utf8.count) bytes")
            seen.append("error: \(message)")
        }
        return seen
    }

    static func mapping(_ bytes: [UInt8]) {
        if mapWithoutDatabase(bytes) { roundTrip(bytes) }
    }

    /// Maps the input as a whole tree and as the node at /posts; returns whether the whole tree imports with
    /// no value rejected.
    static func mapWithoutDatabase(_ bytes: [UInt8]) -> Bool {
        var acceptedWhole = false
        for at in [[], ["posts"]] {
            let options = ImportOptions(maximumRejects: 1_000, at: at)
            let report: ImportReport
            do {
                report = try ImportMapping.validate(MemorySource(bytes), options: options)
            } catch {
                let message = String(describing: error)
                precondition(message.utf8.count < 8192, "an import error of \(message.utf8.count) bytes")
                continue
            }
            precondition(report.rejects.count <= 1_000)
            precondition(report.lines.allSatisfy { $0.rowsImported <= $0.rowsRead })
            if at.isEmpty { acceptedWhole = report.rejects.isEmpty }
        }
        return acceptedWhole
    }

    /// A document the import accepts whole writes back as JSON that parses to the same tree.
    static func roundTrip(_ bytes: [UInt8]) {
        guard let text = String(validating: bytes, as: UTF8.self),
            let tree = try? TreeValue.parse(json: text)
        else { return }
        for options in [JSONTextWriter.Options(), JSONTextWriter.Options(isPretty: true, rendersArrays: false)] {
            var writer = JSONTextWriter(options: options)
            writer.value(tree)
            writer.finish()
            let again = try? TreeValue.parse(json: String(decoding: writer.bytes, as: UTF8.self))
            precondition(
                again == tree,
                "the tree changed through JSONTextWriter: \(text.prefix(300).debugDescription) "
                    + "became \(String(decoding: writer.bytes.prefix(300), as: UTF8.self).debugDescription)")
        }
    }

    // MARK: verify and sync

    /// Where the comparisons' temporary files go (a record's text past a megabyte, a sorted file's runs).
    private static let scratch = TreeSorter.defaultTemporaryDirectory

    static func comparison(_ bytes: [UInt8]) {
        var differences: [TreeDifference] = []
        let compared: Bool
        do {
            compared = try compareWithItself(bytes, sorted: false, into: &differences)
        } catch {
            return
        }
        if !compared {
            differences = []
            guard (try? compareWithItself(bytes, sorted: true, into: &differences)) == true else { return }
        }
        expectOrdered(differences.map(\.path), allowingNested: true, "verify")
        if !differences.contains(where: { $0.kind == .rejected }) {
            precondition(differences.isEmpty, "a document differs from itself: \(differences.prefix(3))")
        }
    }

    /// Compares the input with itself, each side read as it is or sorted; false when its keys are out of order.
    private static func compareWithItself(
        _ bytes: [UInt8], sorted: Bool, into differences: inout [TreeDifference]
    ) throws -> Bool {
        func open() throws -> any ByteSource {
            sorted ? try TreeSorter.sort(MemorySource(bytes), temporaryDirectory: scratch) : MemorySource(bytes)
        }
        var found: [TreeDifference] = []
        var comparison = TreeComparison(valueLimit: 4096) { found.append($0) }
        var source = JSONReader(source: try open())
        var store = JSONReader(source: try open())
        do {
            try comparison.compare(source: &source, store: &store)
        } catch let error as TreeError where error.kind == .unordered {
            precondition(!sorted, "a sorted document is out of RTDB order: \(error)")
            return false
        }
        differences = found
        return true
    }

    /// A store of a few records, typed and not, in RTDB order, for `sync`'s comparison to write against.
    private static let store =
        #"{"chats":{"u":{"c":{"title":"t"}}},"posts":{"p":{"a":1},"u":{"k":{"image_url":"x"}}},"#
        + #""users":{"u":{"username":"x"}},"x":[1,{"y":true}]}"#

    static func sync(_ bytes: [UInt8]) {
        for sorted in [false, true] {
            var rewrites: [(path: [String], json: String?)] = []
            let plan = TreeComparison.Rewrites(
                isRecordPath: { ImportMapping.storesRecord(at: $0) }, recordRule: { ImportMapping.recordRule(at: $0) },
                temporaryDirectory: scratch,
                onRewrite: { path, text in
                    var json: [UInt8] = []
                    try text?.withChunks { json += $0 }
                    rewrites.append((path, text.map { _ in String(decoding: json, as: UTF8.self) }))
                })
            var comparison = TreeComparison(rewrites: plan, valueLimit: 4096) { _ in }
            do {
                let source: any ByteSource =
                    sorted ? try TreeSorter.sort(MemorySource(bytes), temporaryDirectory: scratch) : MemorySource(bytes)
                var sourceReader = JSONReader(source: source)
                var storeReader = JSONReader(source: MemorySource(store))
                try comparison.compare(source: &sourceReader, store: &storeReader)
            } catch let error as TreeError where error.kind == .unordered && !sorted {
                continue
            } catch {
                precondition(!sorted || (error as? TreeError)?.kind != .unordered, "sorted, yet out of order")
                return
            }
            expectOrdered(rewrites.map(\.path), allowingNested: false, "sync's plan")
            for (path, json) in rewrites {
                guard let json, json != "null" else { continue }
                do {
                    _ = try TreeValue.parse(json: json, normalizing: false)
                } catch let error as TreeError where error.message.contains("outside the range of a double") {
                    // A number beyond a double stays as it was written, for import to reject.
                } catch {
                    preconditionFailure("sync would write \(json.prefix(200).debugDescription) at \(path): \(error)")
                }
            }
            return
        }
    }

    /// Paths in RTDB order, each after the one before; with `allowingNested`, a path may be the one before (a
    /// reject and what the store holds there) or lie below it.
    private static func expectOrdered(_ paths: [[String]], allowingNested: Bool, _ what: String) {
        for (earlier, later) in zip(paths, paths.dropFirst()) {
            if FirebaseKey.isPath(later[...], atOrBelow: earlier[...]) {
                precondition(allowingNested, "\(what): \(later) at or below \(earlier)")
                continue
            }
            precondition(FirebaseKey.pathPrecedes(earlier, later), "\(what): \(later) came after \(earlier)")
        }
    }

    // MARK: The sorter

    static func sorter(_ bytes: [UInt8]) {
        guard let sorted = try? TreeSorter.sort(MemorySource(bytes), temporaryDirectory: scratch, runBytes: 1 << 12)
        else { return }
        var text: [UInt8] = []
        var source: any ByteSource = sorted
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        do {
            while case let count = try chunk.withUnsafeMutableBytes({ try source.read(into: $0) }), count > 0 {
                text += chunk[..<count]
            }
        } catch {
            preconditionFailure("a sorted document could not be read back: \(error)")
        }
        var differences: [TreeDifference] = []
        var comparison = TreeComparison(valueLimit: 4096) { differences.append($0) }
        var one = JSONReader(source: MemorySource(text))
        var other = JSONReader(source: MemorySource(text))
        do {
            try comparison.compare(source: &one, store: &other)
        } catch let error as TreeError {
            precondition(error.kind != .unordered, "the sorter left keys out of order: \(error)")
        } catch {}
        // The same tree, where both parse (the sorter keeps a repeated key's last value, as the parser does).
        if let original = String(validating: bytes, as: UTF8.self),
            let before = try? TreeValue.parse(json: original, normalizing: false),
            let after = try? TreeValue.parse(json: String(decoding: text, as: UTF8.self), normalizing: false)
        {
            precondition(before == after, "the sorter changed the tree")
        }
    }

    // MARK: Writes, the check history, gzip

    static func writes(_ bytes: [UInt8]) {
        let json = String(decoding: bytes, as: UTF8.self)
        for write in [TreeWrite.set(json: json), .update(json: json), .push(json: json)] {
            guard let plan = try? write.plan(at: ["a", "b"]) else { continue }
            for (path, text) in plan.sets {
                precondition(path.starts(with: ["a", "b"]), "a write outside its node: \(path)")
                do {
                    // Nil (a document of nothing, `{"k": null}`) is JSON too.
                    _ = try TreeValue.parse(json: text, normalizing: false)
                } catch {
                    preconditionFailure("a write's JSON is not JSON: \(text.prefix(200).debugDescription): \(error)")
                }
            }
        }
    }

    static func history(_ bytes: [UInt8]) {
        let text = String(decoding: bytes, as: UTF8.self)
        let elements = [text, #"{"check":"x","violations":1,"seconds":0.5,"tripped":false}"#, text]
        let (entries, odd) = CheckRun.entries(ofRecorded: elements)
        precondition(entries.count + odd == elements.count && entries.count >= 1)
        precondition(entries.allSatisfy { $0.violations >= 0 })
    }

    static func gzip(_ bytes: [UInt8]) {
        guard let source = try? GzipSource(MemorySource(bytes), name: "fuzz.json.gz") else { return }
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        var total = 0
        while total < 4 << 20,
            let count = try? chunk.withUnsafeMutableBytes({ try source.read(into: $0) }), count > 0
        {
            total += count
        }
    }
}
