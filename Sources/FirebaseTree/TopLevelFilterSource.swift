/// A JSON document with only the top-level members a `TopLevelSelection` selects, and `"key": null` appended for
/// each of `removing` it did not meet: what a merge import reads so that `import --only`/`--exclude` replaces the
/// selected nodes (those the file lacks removed) and leaves every other node of the store as it is. The members
/// left out are skipped by counting brackets outside strings, unchecked, as pg_restore skips what it does not
/// restore; the members kept are passed through byte for byte, for the importer's reader to check.
public struct TopLevelFilterSource: ByteSource {
    private var input: ByteCursor
    private let selection: TopLevelSelection
    private let removing: [String]
    /// The top-level keys met so far, selected or not.
    public private(set) var keysMet: Set<String> = []

    private var output: [UInt8] = []
    private var outputCursor = 0
    private var state = State.beforeRoot
    private var hasWrittenMember = false

    private enum State {
        case beforeRoot, beforeKey, inKey, afterKey, inValue, afterValue, finished
    }

    // The member being read: its key's bytes, whether it is kept, and the value's bracket depth and string state.
    private var key: [UInt8] = []
    private var keyEscaped = false
    private var keeps = false
    private var depth = 0
    private var inString = false
    private var escaped = false
    private var valueStarted = false

    /// `base` with only the members `selection` selects, then `"key": null` for each key of `removing` the
    /// document did not hold.
    public init(_ base: some ByteSource, selection: TopLevelSelection, removing: [String] = []) {
        input = ByteCursor(base)
        self.selection = selection
        self.removing = removing
    }

    private func malformed(_ message: String) -> TreeError {
        TreeError(.malformedInput, "--only/--exclude: \(message)")
    }

    /// Hands over the filtered document's next bytes; 0 at its end.
    public mutating func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        while outputCursor == output.count {
            output.removeAll(keepingCapacity: true)
            outputCursor = 0
            guard state != .finished else { return 0 }
            try produce(upTo: buffer.count)
        }
        let count = min(buffer.count, output.count - outputCursor)
        output.withUnsafeBytes { bytes in
            buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[outputCursor..<outputCursor + count]))
        }
        outputCursor += count
        return count
    }

    /// Reads input until about `limit` bytes are ready to hand over, or the document ends.
    private mutating func produce(upTo limit: Int) throws {
        while output.count < limit {
            guard let byte = try input.next() else {
                guard state == .finished else { throw malformed("the document ends early") }
                return
            }
            switch state {
            case .beforeRoot:
                if JSONReader.isWhitespace(byte) || (byte == 0xEF || byte == 0xBB || byte == 0xBF) { continue }
                guard byte == UInt8(ascii: "{") else { throw malformed("the file's root is not an object") }
                output.append(byte)
                state = .beforeKey
            case .beforeKey:
                if JSONReader.isWhitespace(byte) || byte == UInt8(ascii: ",") { continue }
                if byte == UInt8(ascii: "}") {
                    finish()
                    return
                }
                guard byte == UInt8(ascii: "\"") else { throw malformed("expected a key") }
                key = []
                keyEscaped = false
                state = .inKey
            case .inKey:
                if keyEscaped {
                    keyEscaped = false
                    key.append(byte)
                } else if byte == UInt8(ascii: "\\") {
                    keyEscaped = true
                    key.append(byte)
                } else if byte == UInt8(ascii: "\"") {
                    let name = try decodedKey()
                    keysMet.insert(name)
                    keeps = selection.contains(name)
                    if keeps {
                        if hasWrittenMember { output.append(UInt8(ascii: ",")) }
                        hasWrittenMember = true
                        output.append(UInt8(ascii: "\""))
                        output += key
                        output.append(UInt8(ascii: "\""))
                    }
                    state = .afterKey
                } else {
                    key.append(byte)
                }
            case .afterKey:
                if JSONReader.isWhitespace(byte) { continue }
                guard byte == UInt8(ascii: ":") else { throw malformed("expected ':' after a key") }
                if keeps { output.append(byte) }
                depth = 0
                inString = false
                escaped = false
                valueStarted = false
                state = .inValue
            case .inValue:
                if !valueStarted, JSONReader.isWhitespace(byte) { continue }
                if depth == 0, valueStarted, !inString,
                    byte == UInt8(ascii: ",") || byte == UInt8(ascii: "}") || JSONReader.isWhitespace(byte)
                {
                    // The end of a scalar value.
                    if byte == UInt8(ascii: "}") {
                        finish()
                        return
                    }
                    state = byte == UInt8(ascii: ",") ? .beforeKey : .afterValue
                    continue
                }
                valueStarted = true
                if keeps { output.append(byte) }
                if inString {
                    if escaped {
                        escaped = false
                    } else if byte == UInt8(ascii: "\\") {
                        escaped = true
                    } else if byte == UInt8(ascii: "\"") {
                        inString = false
                        if depth == 0 { state = .afterValue }
                    }
                } else if byte == UInt8(ascii: "\"") {
                    inString = true
                } else if byte == UInt8(ascii: "{") || byte == UInt8(ascii: "[") {
                    depth += 1
                } else if byte == UInt8(ascii: "}") || byte == UInt8(ascii: "]") {
                    depth -= 1
                    if depth == 0 { state = .afterValue }
                    if depth < 0 { throw malformed("unbalanced brackets") }
                }
            case .afterValue:
                if JSONReader.isWhitespace(byte) { continue }
                if byte == UInt8(ascii: ",") {
                    state = .beforeKey
                } else if byte == UInt8(ascii: "}") {
                    finish()
                    return
                } else {
                    throw malformed("expected ',' or '}' after a value")
                }
            case .finished:
                if JSONReader.isWhitespace(byte) { continue }
                throw malformed("unexpected data after the document")
            }
        }
    }

    /// The key just read, its escapes undone.
    private func decodedKey() throws -> String {
        guard key.contains(UInt8(ascii: "\\")) else { return String(decoding: key, as: UTF8.self) }
        var reader = JSONReader(source: MemorySource([UInt8(ascii: "\"")] + key + [UInt8(ascii: "\"")]))
        guard try reader.next() == .string else { throw malformed("a key is not a JSON string") }
        return reader.string
    }

    /// Appends the removals and closes the document.
    private mutating func finish() {
        for name in removing where !keysMet.contains(name) && selection.contains(name) {
            if hasWrittenMember { output.append(UInt8(ascii: ",")) }
            hasWrittenMember = true
            var quoted: [UInt8] = []
            var text = name
            text.withUTF8 { JSONTextWriter.appendQuoted($0, to: &quoted) }
            output += quoted + Array(":null".utf8)
        }
        output.append(UInt8(ascii: "}"))
        state = .finished
    }
}
