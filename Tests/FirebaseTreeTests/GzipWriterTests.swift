import Foundation
import Testing

@testable import FirebaseTree

/// The gzip writer cuts its input into blocks deflated apart (on several threads) into one gzip member: what it
/// writes must read back as the input through zlib (`GzipSource`) and through GNU gzip's own decompressor, whose
/// `-t` also checks the trailer's CRC and length, whatever the input's size against the block's.
@Suite("gzip writer")
struct GzipWriterTests {
    /// `input` written in pieces of `piece` bytes, compressed on `threads` threads.
    private func compressed(_ input: [UInt8], threads: Int, piece: Int) throws -> [UInt8] {
        var output: [UInt8] = []
        let gzip = try GzipWriter(threads: threads) { output.append(contentsOf: $0) }
        var offset = 0
        while offset < input.count {
            let end = min(input.count, offset + piece)
            try input[offset..<end].withUnsafeBufferPointer { try gzip.write($0) }
            offset = end
        }
        try gzip.finish()
        return output
    }

    private func decompressed(_ bytes: [UInt8]) throws -> [UInt8] {
        let source = try GzipSource(MemorySource(bytes, chunkSize: 10_007), name: "test.gz")
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        var text: [UInt8] = []
        while case let count = try buffer.withUnsafeMutableBytes({ try source.read(into: $0) }), count > 0 {
            text += buffer[..<count]
        }
        return text
    }

    /// What `gzip -dc` makes of `bytes`, and whether `gzip -t` finds them whole.
    private func gnuGzip(_ bytes: [UInt8]) throws -> (output: [UInt8], isWhole: Bool) {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("gz-\(UUID().uuidString).gz")
        try Data(bytes).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        func run(_ arguments: [String]) throws -> (Data, Int32) {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/bin/gzip")
            process.arguments = arguments + [file.path]
            let pipe = Pipe()
            process.standardOutput = pipe
            try process.run()
            let data = pipe.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return (data, process.terminationStatus)
        }
        let (output, _) = try run(["-dc"])
        let (_, status) = try run(["-t"])
        return (Array(output), status == 0)
    }

    /// Inputs around the block's size: none, one byte, less than a block, exactly one and two, and more, of JSON
    /// that repeats across the blocks (each refers to the one before) and of bytes that do not compress.
    static let inputs: [(String, [UInt8])] = {
        let block = GzipWriter.blockSize
        let json = Array(
            (0..<40_000).map { #""user\#($0 % 997)": {"username": "name \#($0 % 991)", "n": \#($0)}, "# }.joined()
                .utf8)
        var random = SystemRandomNumberGenerator()
        let noise = (0..<(block + 12_345)).map { _ in UInt8.random(in: 0...255, using: &random) }
        return [
            ("empty", []), ("one byte", [42]), ("a small text", Array(json.prefix(1000))),
            ("one block", Array(json.prefix(block))), ("two blocks", Array(json.prefix(2 * block))),
            ("blocks and a part", json), ("incompressible", noise),
        ]
    }()

    @Test(arguments: [1, 3])
    func whatItWritesReadsBackAsItsInput(threads: Int) throws {
        for (name, input) in Self.inputs {
            for piece in [1 << 16, 7_919] where piece < 10_000 || input.count < 2 * GzipWriter.blockSize {
                let bytes = try compressed(input, threads: threads, piece: piece)
                #expect(bytes.starts(with: [0x1f, 0x8b, 8]), "\(name)")
                #expect(try decompressed(bytes) == input, "\(name), \(threads) threads, pieces of \(piece)")
                let gnu = try gnuGzip(bytes)
                #expect(gnu.output == input && gnu.isWhole, "\(name): gzip -dc / -t")
            }
        }
    }

    /// The same input gives the same bytes whatever the number of threads, and near one stream's size.
    @Test func threadsChangeNothingOfTheOutput() throws {
        let input = Self.inputs.first { $0.0 == "blocks and a part" }!.1
        let one = try compressed(input, threads: 1, piece: 1 << 16)
        #expect(try compressed(input, threads: 4, piece: 3_001) == one)
        #expect(one.count < input.count / 4, "\(one.count) of \(input.count)")
    }

    /// A sink that fails stops the writer with its error, and the threads with it.
    @Test func aFailingSinkFailsTheWrite() throws {
        struct Full: Error {}
        var calls = 0
        let gzip = try GzipWriter(threads: 2) { _ in
            calls += 1
            if calls > 2 { throw Full() }
        }
        let input = Self.inputs.first { $0.0 == "incompressible" }!.1
        #expect(throws: Full.self) {
            for _ in 0..<20 { try input.withUnsafeBufferPointer { try gzip.write($0) } }
            try gzip.finish()
        }
    }
}
