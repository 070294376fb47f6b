import Foundation
import Storage

/// The lines of a script (`-f FILE`, `\i FILE`, piped stdin, the startup file), read a chunk at a time as the
/// loop asks for them, numbered for error messages. What is held is one line: a line longer than
/// `maximumLineBytes` (no command needs one; a large value belongs in a file) is read past, not kept, and comes as
/// a `SourceLine` with a `problem`. Bytes that are not UTF-8 reach the parser as U+FFFD, as psql passes them on,
/// and a line's `\r\n` ending is taken as `\n`.
struct ScriptLines: Sequence, IteratorProtocol {
    /// The longest line a script may hold.
    static let maximumLineBytes = 16 << 20

    private let file: InputFile
    private let name: String
    private var source: (any ByteSource)?
    private var chunk = [UInt8](repeating: 0, count: 64 << 10)
    private var start = 0, end = 0
    private var number = 0
    private var isAtEnd = false

    /// The lines of `path` (`-` for stdin), opened now: a missing file throws here.
    init(path: String) throws {
        file = try InputFile(path: path)
        name = path == "-" ? "<stdin>" : path
    }

    mutating func next() -> SourceLine? {
        guard !isAtEnd || start < end else { return nil }
        var line: [UInt8] = []
        var length = 0
        var problem: String?
        while true {
            if start == end {
                guard let count = fill(&problem), count > 0 else {
                    isAtEnd = true
                    // A last line without a newline is a line; nothing after the last newline is none.
                    if length == 0 && problem == nil { return nil }
                    break
                }
            }
            let available = chunk[start..<end]
            let newline = available.firstIndex(of: UInt8(ascii: "\n"))
            let piece = available[..<(newline ?? end)]
            if length + piece.count <= Self.maximumLineBytes {
                line += piece
            } else if line.count > 0 {
                line = []
            }
            length += piece.count
            start = newline.map { $0 + 1 } ?? end
            if newline != nil { break }
        }
        number += 1
        let location = "\(name):\(number)"
        if let problem { return SourceLine(text: "", location: location, problem: problem) }
        guard length <= Self.maximumLineBytes else {
            return SourceLine(
                text: "", location: location,
                problem: "a line of \(length) bytes, longer than a script's \(Self.maximumLineBytes >> 20) MB "
                    + "(a large value belongs in a file)")
        }
        if line.last == UInt8(ascii: "\r") { line.removeLast() }
        return SourceLine(text: String(decoding: line, as: UTF8.self), location: location)
    }

    /// Reads the next chunk; nil, with `problem` set, when the file cannot be read.
    private mutating func fill(_ problem: inout String?) -> Int? {
        do {
            if source == nil { source = try file.source() }
            guard var source else { return nil }
            let count = try chunk.withUnsafeMutableBytes { try source.read(into: $0) }
            self.source = source
            (start, end) = (0, count)
            return count
        } catch {
            problem = "cannot read \(name): \(ConsoleError.from(error).message)"
            return nil
        }
    }
}
