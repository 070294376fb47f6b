import FirebaseTree
import Foundation

/// Hands the chunks an export writes on one thread to a reader on another, holding at most a few of them: the
/// export waits while the reader is behind, and stops (its write throws) once the reader has gone.
final class ExportPipe: @unchecked Sendable {
    /// Chunks buffered at most before the writer waits.
    private static let depth = 4
    /// The largest chunk: a long value is queued in pieces, so the pipe holds at most `depth` of these.
    private static let chunkBytes = 1 << 20
    private let condition = NSCondition()
    private var chunks: [[UInt8]] = []
    private var isFinished = false
    private var isAbandoned = false
    private var failure: (any Error)?

    /// Thrown to the writer once the reader has gone; it only unwinds the export.
    struct ReaderGone: Error {}

    /// Queues a copy of `bytes`, waiting while the queue is full; throws `ReaderGone` once the reader has gone.
    func write(_ bytes: UnsafeBufferPointer<UInt8>) throws {
        var start = 0
        repeat {
            let end = min(bytes.count, start + Self.chunkBytes)
            condition.lock()
            defer { condition.unlock() }
            while chunks.count >= Self.depth && !isAbandoned { condition.wait() }
            guard !isAbandoned else { throw ReaderGone() }
            chunks.append(Array(bytes[start..<end]))
            condition.broadcast()
            start = end
        } while start < bytes.count
    }

    /// Ends the stream: the reader sees the end of input after the queued chunks, or `error` when given.
    func finish(throwing error: (any Error)?) {
        condition.lock()
        isFinished = true
        failure = error
        condition.broadcast()
        condition.unlock()
    }

    /// The reader is done (or failed): wake and stop the writer.
    func abandon() {
        condition.lock()
        isAbandoned = true
        chunks.removeAll()
        condition.broadcast()
        condition.unlock()
    }

    /// The next chunk, waiting for it; nil at the end. Throws the export's error if it failed.
    func nextChunk() throws -> [UInt8]? {
        condition.lock()
        defer { condition.unlock() }
        while chunks.isEmpty && !isFinished { condition.wait() }
        if !chunks.isEmpty {
            condition.broadcast()
            return chunks.removeFirst()
        }
        if let failure { throw failure }
        return nil
    }

    /// The reading end, as a `ByteSource` for a `JSONReader`.
    struct Source: ByteSource {
        let pipe: ExportPipe
        private var chunk: [UInt8] = []
        private var offset = 0

        init(_ pipe: ExportPipe) {
            self.pipe = pipe
        }

        mutating func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
            while offset == chunk.count {
                guard let next = try pipe.nextChunk() else { return 0 }
                chunk = next
                offset = 0
            }
            let count = min(buffer.count, chunk.count - offset)
            chunk.withUnsafeBytes { bytes in
                UnsafeMutableRawBufferPointer(rebasing: buffer[..<count]).copyMemory(
                    from: UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + count]))
            }
            offset += count
            return count
        }
    }
}
