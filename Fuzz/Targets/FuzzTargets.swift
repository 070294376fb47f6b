import Storage

/// What the fuzzers run on each input: the streaming JSON reader (with large and tiny buffers, which must agree),
/// the import's mapping without a database (directly and nested under `--at`), and the tree round trip. A
/// property that fails traps, for libFuzzer to report; errors thrown for bad input are the expected outcome.
public enum FuzzTargets {
    /// Runs every target on one input.
    public static func run(_ data: UnsafeBufferPointer<UInt8>) {
        let bytes = Array(data)
        let whole = tokens(of: bytes, bufferSize: 1 << 20)
        // A tiny buffer makes every token cross a refill; the reader must see exactly the same document.
        let bufferSize = 4 + Int(bytes.first ?? 0) % 29
        let pieces = tokens(of: bytes, bufferSize: bufferSize)
        if whole != pieces {
            let index = zip(whole, pieces).enumerated().first { $0.element.0 != $0.element.1 }?.offset
                ?? min(whole.count, pieces.count)
            let seen = index < whole.count ? whole[index] : "(nothing)", small = index < pieces.count ? pieces[index] : "(nothing)"
            preconditionFailure("the reader depends on its buffer size: token \(index) is \(seen), with \(bufferSize) bytes \(small)")
        }
        if mapWithoutDatabase(bytes) { roundTrip(bytes) }
    }

    /// The tokens, their text and the error (as its message and offset) of reading the whole input.
    static func tokens(of bytes: [UInt8], bufferSize: Int) -> [String] {
        var reader = JSONReader(source: MemorySource(bytes), bufferSize: bufferSize, maximumTokenBytes: 1 << 20)
        var seen: [String] = []
        do {
            while true {
                let token = try reader.next()
                let value = switch token {
                case .key, .string: reader.string
                case .number: String(reader.number)
                default: ""
                }
                seen.append("\(token) \(value) @\(reader.position.offset) depth \(reader.depth)")
                if token == .end { break }
            }
        } catch {
            seen.append("error: \(error)")
        }
        return seen
    }

    /// Maps the input as a whole tree and as the node at /posts; returns whether the whole tree imports with
    /// no value rejected.
    static func mapWithoutDatabase(_ bytes: [UInt8]) -> Bool {
        var acceptedWhole = false
        for at in [[], ["posts"]] {
            let options = ImportOptions(maximumRejects: 1_000, at: at)
            guard let report = try? ImportMapping.validate(MemorySource(bytes), options: options) else { continue }
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
            precondition(again == tree, "the tree changed through JSONTextWriter: \(text.prefix(300).debugDescription) "
                + "became \(String(decoding: writer.bytes.prefix(300), as: UTF8.self).debugDescription)")
        }
    }
}
