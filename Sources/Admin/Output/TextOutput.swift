import Foundation

/// A buffered writer to a file descriptor (stdout or stderr), flushed at the end of each command, so large
/// results are not written a syscall per line.
final class TextOutput {
    private let descriptor: Int32
    private var buffer: [UInt8] = []
    /// Whether the descriptor is a terminal (progress and color only then).
    let isTerminal: Bool

    private let closesWhenDone: Bool

    init(descriptor: Int32, closesWhenDone: Bool = false) {
        self.descriptor = descriptor
        self.closesWhenDone = closesWhenDone
        isTerminal = isatty(descriptor) == 1
    }

    deinit {
        flush()
        if closesWhenDone { close(descriptor) }
    }

    /// Appends text; sends it once the buffer is large.
    func write(_ text: String) {
        buffer.append(contentsOf: text.utf8)
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
