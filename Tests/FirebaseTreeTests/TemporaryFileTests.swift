import Foundation
import Testing
import TreeTestSupport

@testable import FirebaseTree

/// A temporary file that bypasses the page cache (`O_DIRECT`, in aligned blocks) reads back exactly what was
/// appended, in pieces of any size at any offset, its last partial block from memory, as an ordinary one does.
@Suite("Temporary files (no server)")
struct TemporaryFileTests {
    @Test(arguments: ["/tmp", "/dev/shm"])
    func whatIsAppendedReadsBackAtAnyOffset(directory: String) throws {
        guard FileManager.default.isWritableFile(atPath: directory) else { return }
        var random = SeededGenerator(state: 0xD1_2EC7)
        for bypassing in [true, false] {
            let file = try TemporaryFile(in: directory, bypassingPageCache: bypassing)
            // tmpfs takes O_DIRECT from Linux 6.6 on, and is an ordinary file before.
            if try Self.fileSystemType(of: directory) != "tmpfs" {
                #expect(file.bypassesPageCache == bypassing, "\(directory), bypassing: \(bypassing)")
            }
            var expected: [UInt8] = []
            // Appends from one byte to several buffers' worth, some reads (and flushes) in between.
            for round in 0..<40 {
                let count = [1, 7, 4095, 4096, 4097, 65_536, 1 << 20, (1 << 20) + 3, 2 << 20][Int(random.next() % 9)]
                let seed = UInt8(truncatingIfNeeded: random.next())
                let bytes = [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
                    for index in 0..<count { buffer[index] = UInt8(truncatingIfNeeded: index &* 131) ^ seed }
                    initialized = count
                }
                try bytes.withUnsafeBytes { try file.append($0) }
                expected += bytes
                if round % 5 == 0 { try file.flush() }
                #expect(file.size == expected.count)
                let offset = Int(random.next() % UInt64(expected.count))
                let length = Int(random.next() % UInt64(min(2 << 20, expected.count - offset) + 1))
                let piece = try read(file, at: offset, count: length)
                #expect(piece == Array(expected[offset..<offset + length]), "round \(round)")
            }
            try file.flush()
            #expect(try read(file, at: 0, count: expected.count) == expected, "bypassing: \(bypassing)")
            var buffer = [UInt8](repeating: 0, count: 10)
            #expect(try buffer.withUnsafeMutableBytes { try file.read(at: expected.count, into: $0) } == 0)
        }
    }

    /// The type of the file system `directory` is on, as /proc/mounts says (its longest mount point above it).
    static func fileSystemType(of directory: String) throws -> String? {
        let mounts = try String(contentsOfFile: "/proc/mounts", encoding: .utf8)
        let fields = mounts.split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
        return fields.filter { $0.count > 2 && (directory + "/").hasPrefix($0[1] == "/" ? "/" : $0[1] + "/") }
            .max { $0[1].count < $1[1].count }?[2]
    }

    /// `count` bytes from `offset`, read as a caller does: in as many reads as the file needs.
    func read(_ file: TemporaryFile, at offset: Int, count: Int) throws -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        var done = 0
        while done < count {
            let read = try bytes.withUnsafeMutableBytes {
                try file.read(at: offset + done, into: UnsafeMutableRawBufferPointer(rebasing: $0[done...]))
            }
            guard read > 0 else { break }
            done += read
        }
        return Array(bytes[..<done])
    }
}
