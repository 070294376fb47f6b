import Dispatch
import FirebaseTree

/// A file that gives its first half, then waits (`reached` is signalled) until `open` is signalled.
final class GatedSource: ByteSource, @unchecked Sendable {
    private let bytes: [UInt8]
    private var offset = 0
    let reached = DispatchSemaphore(value: 0)
    let open = DispatchSemaphore(value: 0)

    init(_ text: String) { bytes = Array(text.utf8) }

    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        if offset == bytes.count / 2 {
            reached.signal()
            open.wait()
        }
        let end = offset < bytes.count / 2 ? bytes.count / 2 : bytes.count
        let count = min(buffer.count, end - offset)
        guard count > 0 else { return 0 }
        bytes.withUnsafeBytes { buffer.baseAddress!.copyMemory(from: $0.baseAddress! + offset, byteCount: count) }
        offset += count
        return count
    }
}
