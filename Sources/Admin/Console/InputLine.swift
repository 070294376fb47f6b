import Foundation

/// One line of stdin, read with read(2) a byte at a time rather than `readLine`, which retries after Ctrl-C and
/// leaves the console deaf, and reads ahead of the line (what follows belongs to the next command). Meanwhile no
/// statement runs, so Ctrl-C has nothing to cancel on the server: it ends the read instead.
enum InputLine: Equatable {
    /// The bytes before a line feed.
    case line([UInt8])
    /// The input ended after these bytes (none when it was already at its end).
    case end([UInt8])
    /// Ctrl-C, pressed before or during the read, or a read error.
    case interrupted
    /// More than the bytes allowed came before a line feed.
    case tooLong

    /// Reads the next line, at most `maximumBytes` long.
    static func read(maximumBytes: Int = .max) -> InputLine {
        Interrupt.whileWaitingForInput {
            if Interrupt.isPending {
                Interrupt.consume()
                return .interrupted
            }
            var bytes: [UInt8] = []
            var byte: UInt8 = 0
            while bytes.count <= maximumBytes {
                let count = Foundation.read(STDIN_FILENO, &byte, 1)
                if count == 1 {
                    if byte == UInt8(ascii: "\n") { return .line(bytes) }
                    bytes.append(byte)
                } else if count == 0 {
                    return .end(bytes)
                } else if errno != EINTR || Interrupt.isPending {
                    Interrupt.consume()
                    return .interrupted
                }
            }
            return .tooLong
        }
    }
}
