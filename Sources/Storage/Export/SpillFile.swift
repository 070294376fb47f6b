import FirebaseTree
import Foundation

/// Bytes appended in memory up to a budget and beyond it to an anonymous temporary file, then read back in
/// order: where an export keeps what it cannot write yet (the children of an object that may still turn out to be
/// an array), so that memory stays bounded whatever their size.
///
/// The file is a `TemporaryFile` in `$TMPDIR` (else `/tmp`): it has no name, so nobody can open, replace or link
/// it, and it disappears when closed, even if the process is killed.
final class SpillBuffer {
    /// Bytes kept in memory before they go to the file.
    let memoryBudget: Int
    /// Whether the file bypasses the page cache (`TemporaryFile`): for many megabytes read back once, in order.
    let bypassesPageCache: Bool
    private var memory: [UInt8] = []
    private var file: TemporaryFile?

    init(memoryBudget: Int, bypassingPageCache: Bool = false) {
        self.memoryBudget = memoryBudget
        bypassesPageCache = bypassingPageCache
    }

    /// Bytes written to the file so far.
    var spilledByteCount: Int { file?.size ?? 0 }

    /// All bytes appended so far.
    var count: Int { spilledByteCount + memory.count }

    /// Bytes held in memory now.
    var heldByteCount: Int { memory.count }

    /// Appends `bytes`, moving what is held to the file once it exceeds the budget.
    func append(_ bytes: UnsafeBufferPointer<UInt8>) throws {
        memory.append(contentsOf: bytes)
        if memory.count > memoryBudget { try spill() }
    }

    /// Appends `bytes` (small ones, such as table entries).
    func append(_ bytes: [UInt8]) throws {
        try bytes.withUnsafeBufferPointer { try append($0) }
    }

    private func spill() throws {
        try Self.explainingFailures {
            let spilled = try file ?? TemporaryFile(bypassingPageCache: bypassesPageCache)
            file = spilled
            try memory.withUnsafeBytes { try spilled.append($0) }
            try spilled.flush()
        }
        memory.removeAll(keepingCapacity: true)
    }

    /// Calls `body` with the bytes in `range` (offsets from the first byte appended), in pieces of at most
    /// `pieceSize` bytes.
    func read(_ range: Range<Int>, pieceSize: Int = 1 << 20, _ body: (UnsafeBufferPointer<UInt8>) throws -> Void) throws
    {
        var start = range.lowerBound
        if let file, start < spilledByteCount {
            var piece = [UInt8](repeating: 0, count: min(pieceSize, range.count))
            while start < min(range.upperBound, spilledByteCount) {
                let length = min(piece.count, min(range.upperBound, spilledByteCount) - start)
                let read = try Self.explainingFailures {
                    try piece.withUnsafeMutableBytes {
                        try file.read(at: start, into: UnsafeMutableRawBufferPointer(rebasing: $0[..<length]))
                    }
                }
                guard read > 0 else { throw StorageError(.io, "a temporary file ended early") }
                try piece.withUnsafeBufferPointer { try body(UnsafeBufferPointer(rebasing: $0[..<read])) }
                start += read
            }
        }
        guard start < range.upperBound else { return }
        try memory.withUnsafeBufferPointer { buffer in
            var offset = start - spilledByteCount
            let end = range.upperBound - spilledByteCount
            while offset < end {
                let stop = min(end, offset + pieceSize)
                try body(UnsafeBufferPointer(rebasing: buffer[offset..<stop]))
                offset = stop
            }
        }
    }

    /// Runs `body`, turning a temporary file's failure into Storage's error, with what to do about it.
    private static func explainingFailures<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as TreeError {
            throw StorageError(
                .io, error.message,
                hint: "Exports keep objects that may be arrays in $TMPDIR (or /tmp) while they are written; free space "
                    + "there or point TMPDIR to a writable directory on a file system that supports O_TMPFILE.")
        }
    }
}
