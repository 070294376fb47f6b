extension JSONReader {
    /// Reads the current value to its end and returns it as compact JSON cut at `maximumBytes` (at a
    /// character's boundary), whether it was cut, and the bytes it took in the input: what an importer shows of
    /// a value it rejects.
    public mutating func captureValue(maximumBytes: Int) throws -> (text: String, isTruncated: Bool, inputBytes: Int) {
        var out: [UInt8] = []
        var needsComma: [Bool] = []
        let start = tokenStart
        let startDepth = depth - (token == .objectStart || token == .arrayStart ? 1 : 0)
        var isTruncated = false
        func write(_ bytes: some Collection<UInt8>) {
            guard !isTruncated else { return }
            let room = maximumBytes - out.count
            if bytes.count > room { isTruncated = true }
            out.append(contentsOf: bytes.prefix(room))
        }
        func beforeValue() {
            if let last = needsComma.last {
                if last { write([UInt8(ascii: ",")]) }
                needsComma[needsComma.count - 1] = true
            }
        }
        var afterKey = false
        while true {
            let token = self.token
            switch token {
            case .objectStart, .arrayStart:
                if !afterKey { beforeValue() }
                write([UInt8(ascii: token == .objectStart ? "{" : "[")])
                needsComma.append(false)
            case .objectEnd, .arrayEnd:
                needsComma.removeLast()
                write([UInt8(ascii: token == .objectEnd ? "}" : "]")])
            case .key:
                beforeValue()
                var quoted: [UInt8] = []
                JSONTextWriter.appendQuoted(text, to: &quoted)
                write(quoted + [UInt8(ascii: ":")])
            case .string:
                if !afterKey { beforeValue() }
                var quoted: [UInt8] = []
                JSONTextWriter.appendQuoted(
                    UnsafeBufferPointer(rebasing: text.prefix(maximumBytes)), to: &quoted)
                write(quoted)
            case .number:
                if !afterKey { beforeValue() }
                write(JavaScriptNumber.format(number).utf8)
            case .true, .false, .null:
                if !afterKey { beforeValue() }
                write(token == .true ? "true".utf8 : token == .false ? "false".utf8 : "null".utf8)
            case .end:
                break
            }
            afterKey = token == .key
            if depth <= startDepth, token != .key { break }
            try next()
        }
        if isTruncated {
            // Cut at a character's boundary.
            while let last = out.last, UTF8.isContinuation(last) { out.removeLast() }
            if let last = out.last, last >= 0xC0 { out.removeLast() }
        }
        return (String(decoding: out, as: UTF8.self), isTruncated, bytesRead - start)
    }
}
