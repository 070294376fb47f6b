import Foundation

/// Bytes appended in memory up to a budget and beyond it to an anonymous temporary file, then read back in
/// order: where an export keeps what it cannot write yet (the children of an object that may still turn out to be
/// an array), so that memory stays bounded whatever their size.
///
/// The file is created with `O_TMPFILE` in `$TMPDIR` (else `/tmp`): it has no name, so nobody can open, replace
/// or link it, and it disappears when closed, even if the process is killed.
final class SpillBuffer {
    /// Bytes kept in memory before they go to the file.
    let memoryBudget: Int
    private var memory: [UInt8] = []
    private var descriptor: Int32 = -1
    /// Bytes written to the file so far.
    private(set) var spilledByteCount = 0

    init(memoryBudget: Int) {
        self.memoryBudget = memoryBudget
    }

    deinit {
        if descriptor >= 0 { close(descriptor) }
    }

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
        if descriptor < 0 { descriptor = try Self.openAnonymousFile() }
        try memory.withUnsafeBufferPointer { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = pwrite(descriptor, buffer.baseAddress! + offset, buffer.count - offset,
                                     off_t(spilledByteCount + offset))
                if written < 0 {
                    if errno == EINTR { continue }
                    throw StorageError(.io, "cannot write a temporary file: \(String(cString: strerror(errno)))",
                                       hint: "Exports keep objects that may be arrays in $TMPDIR (or /tmp) while "
                                           + "they are written; free space there or point TMPDIR elsewhere.")
                }
                offset += written
            }
        }
        spilledByteCount += memory.count
        memory.removeAll(keepingCapacity: true)
    }

    /// Calls `body` with the bytes in `range` (offsets from the first byte appended), in pieces of at most
    /// `pieceSize` bytes.
    func read(_ range: Range<Int>, pieceSize: Int = 1 << 20, _ body: (UnsafeBufferPointer<UInt8>) throws -> Void) throws {
        var start = range.lowerBound
        if start < spilledByteCount {
            var piece = [UInt8](repeating: 0, count: min(pieceSize, range.count))
            while start < min(range.upperBound, spilledByteCount) {
                let length = min(piece.count, min(range.upperBound, spilledByteCount) - start)
                let read = piece.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress!, length, off_t(start)) }
                if read < 0, errno == EINTR { continue }
                guard read > 0 else {
                    throw StorageError(.io, "cannot read a temporary file: \(String(cString: strerror(errno)))")
                }
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

    /// Linux's O_TMPFILE (`__O_TMPFILE | O_DIRECTORY`), which Glibc's Swift module does not export.
    private static let openTemporaryFile: Int32 = 0o20_000_000 | O_DIRECTORY

    private static func openAnonymousFile() throws -> Int32 {
        let directory = ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        // O_TMPFILE: an unnamed file in `directory`, so nothing can be planted in its place.
        let descriptor = open(directory, openTemporaryFile | O_RDWR | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw StorageError(.io, "cannot create a temporary file in \(directory): \(String(cString: strerror(errno)))",
                               hint: "Set TMPDIR to a writable directory on a file system that supports O_TMPFILE.")
        }
        return descriptor
    }
}
