import Foundation

/// A buffered writer to a file descriptor (stdout or stderr), flushed at the end of each command, so large
/// results are not written a syscall per line.
final class TextOutput {
    private let descriptor: Int32
    private var buffer: [UInt8] = []
    /// Whether the descriptor is a terminal (progress and color only then).
    let isTerminal: Bool

    private let closesWhenDone: Bool
    /// Whether what is written shows control characters as escapes: data (stdout) on a terminal, where a
    /// stored `ESC ]0;…` would otherwise be obeyed. To a file or a pipe every byte goes as it is.
    private let escapesControls: Bool

    /// A writer to `descriptor`; `isData` for stdout, whose text is escaped on a terminal (stderr's colors are
    /// the console's own).
    init(descriptor: Int32, closesWhenDone: Bool = false, isData: Bool = false) {
        self.descriptor = descriptor
        self.closesWhenDone = closesWhenDone
        isTerminal = isatty(descriptor) == 1
        escapesControls = isData && isTerminal
    }

    deinit {
        flush()
        if closesWhenDone { close(descriptor) }
    }

    /// Runs before each write: the diagnostics' flushes the data written before them.
    var beforeWriting: (() -> Void)?

    /// Appends text; sends it once the buffer is large.
    func write(_ text: String) {
        beforeWriting?()
        buffer.append(contentsOf: (escapesControls ? TerminalText.escaped(text, keepingNewlines: true) : text).utf8)
        if buffer.count >= 1 << 16 { flush() }
    }

    /// Appends text and a newline.
    func line(_ text: String = "") {
        write(text)
        write("\n")
    }

    /// Sends everything buffered; a closed pipe (`admin … | head`) simply ends the output.
    func flush() {
        var offset = 0
        while offset < buffer.count {
            let written = buffer[offset...].withUnsafeBytes { Foundation.write(descriptor, $0.baseAddress, $0.count) }
            if written < 0 {
                if errno == EINTR { continue }
                break
            }
            offset += written
        }
        buffer.removeAll(keepingCapacity: true)
    }
}

/// Bytes streamed to a terminal (`get`, `export -`) with control characters shown as escapes, as `TextOutput`
/// shows them: a UTF-8 sequence cut between two chunks waits for the next.
struct TerminalByteFilter {
    private var pending: [UInt8] = []

    /// `chunk`, escaped, without the bytes of a character it ends in the middle of.
    mutating func filter(_ chunk: UnsafeBufferPointer<UInt8>) -> [UInt8] {
        var bytes = pending + chunk
        pending = []
        // Back to the start of the last character; keep it for later if it is not whole yet.
        var start = bytes.count
        while start > 0, start > bytes.count - 4, bytes[start - 1] & 0xC0 == 0x80 { start -= 1 }
        if start > 0, bytes[start - 1] >= 0xC0 {
            let lead = bytes[start - 1]
            let length = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2
            if bytes.count - (start - 1) < length {
                pending = Array(bytes[(start - 1)...])
                bytes.removeLast(bytes.count - (start - 1))
            }
        }
        return Array(TerminalText.escaped(String(decoding: bytes, as: UTF8.self), keepingNewlines: true).utf8)
    }
}
