import CZlib
import Foundation

/// Compresses bytes into a gzip stream as they are written (`export backup.json.gz`), through zlib, handing the
/// compressed bytes to `sink` in order, on the writer's thread.
///
/// The input is cut into blocks of `blockSize` bytes, each deflated on its own (on `threads` threads) with the
/// last 32 KB of the block before as its dictionary, as pigz does: one gzip member whose deflate stream is the
/// blocks' streams one after another (each but the last ended by a sync flush, which leaves it byte-aligned and
/// open), with the CRC of the whole input combined from the blocks'. gunzip, Python's gzip and zlib read it as
/// any gzip file, 0.02 % larger than one stream's for an export. At gzip's level 6 zlib compresses about 60 MB of
/// JSON a second a core here, which one thread made the export's pace.
public final class GzipWriter {
    /// Input bytes per block.
    static let blockSize = 1 << 18
    /// Bytes of the block before that a block may refer to (deflate's window).
    static let window = 1 << 15

    private let sink: (UnsafeBufferPointer<UInt8>) throws -> Void
    private let level: Int32
    private let pool: DeflatePool?
    private var block: [UInt8] = []
    private var dictionary: [UInt8] = []
    private var submitted = 0
    private var written = 0
    private var crc = crc32(0, nil, 0)
    private var length: UInt64 = 0
    private var isFinished = false

    /// A writer at zlib's default level (6, as gzip's) compressing on `threads` threads (1: on the writer's own);
    /// compressed bytes go to `sink`.
    public init(
        level: Int32 = Z_DEFAULT_COMPRESSION, threads: Int = 1,
        sink: @escaping (UnsafeBufferPointer<UInt8>) throws -> Void
    ) throws {
        self.sink = sink
        self.level = level
        pool = threads > 1 ? DeflatePool(threads: threads) : nil
        block.reserveCapacity(Self.blockSize)
        // No name, no time: the same input gives the same file.
        let header: [UInt8] = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3]
        try header.withUnsafeBufferPointer { try sink($0) }
    }

    deinit { pool?.close() }

    /// Compresses `bytes`.
    public func write(_ bytes: UnsafeBufferPointer<UInt8>) throws {
        var rest = bytes
        while !rest.isEmpty {
            let taken = min(rest.count, Self.blockSize - block.count)
            block.append(contentsOf: UnsafeBufferPointer(rebasing: rest[..<taken]))
            rest = UnsafeBufferPointer(rebasing: rest[taken...])
            if block.count == Self.blockSize { try submit(isLast: false) }
        }
    }

    /// Ends the stream: the last block and the gzip trailer (the input's CRC and length).
    public func finish() throws {
        guard !isFinished else { return }
        try submit(isLast: true)
        while written < submitted { try writeNext() }
        isFinished = true
        var trailer: [UInt8] = []
        for value in [UInt32(truncatingIfNeeded: crc), UInt32(truncatingIfNeeded: length)] {
            trailer += (0..<4).map { UInt8(truncatingIfNeeded: value >> ($0 * 8)) }
        }
        try trailer.withUnsafeBufferPointer { try sink($0) }
    }

    /// Hands the block on (deflating it here without a pool), and writes what is done, in order; with a pool,
    /// waits when as many blocks as twice its threads are under way.
    private func submit(isLast: Bool) throws {
        let job = DeflatePool.Job(
            index: submitted, input: block, dictionary: dictionary, level: level, isLast: isLast)
        submitted += 1
        // Every block but the last is full, and the last has no next.
        if !isLast { dictionary = Array(block.suffix(Self.window)) }
        block = []
        block.reserveCapacity(Self.blockSize)
        guard let pool else {
            try write(Result { try job.run() })
            return
        }
        pool.add(job)
        while submitted - written >= 2 * pool.threads { try writeNext() }
        while let done = pool.take(written, waiting: false) { try write(done) }
    }

    private func writeNext() throws {
        guard let done = pool?.take(written, waiting: true) else {
            throw TreeError(.compression, "compression stopped before block \(written) was done")
        }
        try write(done)
    }

    private func write(_ done: Result<DeflatePool.Output, any Error>) throws {
        let output = try done.get()
        crc = crc32_combine(crc, output.crc, off_t(output.inputCount))
        length += UInt64(output.inputCount)
        written += 1
        try output.bytes.withUnsafeBufferPointer { try sink($0) }
    }
}

/// Threads that deflate a `GzipWriter`'s blocks; each block's output is kept until the writer takes it, in order.
/// `@unchecked Sendable`: `condition` guards every field the threads share.
private final class DeflatePool: @unchecked Sendable {
    /// A block to deflate.
    struct Job: Sendable {
        var index: Int
        var input: [UInt8]
        var dictionary: [UInt8]
        var level: Int32
        var isLast: Bool

        /// The block's raw deflate stream, and its input's CRC.
        func run() throws -> Output {
            let stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
            stream.initialize(to: z_stream())
            defer { stream.deallocate() }
            // -15: raw deflate, the largest window; the gzip header and trailer are the writer's.
            guard
                deflateInit2_(
                    stream, level, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY, ZLIB_VERSION,
                    Int32(MemoryLayout<z_stream>.size)) == Z_OK
            else {
                throw TreeError(.compression, "cannot start compressing")
            }
            defer { deflateEnd(stream) }
            if !dictionary.isEmpty {
                _ = dictionary.withUnsafeBufferPointer { deflateSetDictionary(stream, $0.baseAddress, uInt($0.count)) }
            }
            // The bound is Z_FINISH's; a sync flush adds an empty stored block (5 bytes), and a few more for luck.
            var output = [UInt8](repeating: 0, count: Int(deflateBound(stream, uLong(input.count))) + 64)
            var produced = 0
            var inputCRC = crc32(0, nil, 0)
            try input.withUnsafeBufferPointer { input in
                inputCRC = crc32(inputCRC, input.baseAddress, uInt(input.count))
                stream.pointee.next_in = UnsafeMutablePointer(mutating: input.baseAddress)
                stream.pointee.avail_in = uInt(input.count)
                while true {
                    if produced == output.count { output += [UInt8](repeating: 0, count: 1 << 16) }
                    let status = output.withUnsafeMutableBufferPointer { output in
                        stream.pointee.next_out = output.baseAddress.map { $0 + produced }
                        stream.pointee.avail_out = uInt(output.count - produced)
                        let status = deflate(stream, isLast ? Z_FINISH : Z_SYNC_FLUSH)
                        produced = output.count - Int(stream.pointee.avail_out)
                        return status
                    }
                    guard status == Z_OK || status == Z_STREAM_END || status == Z_BUF_ERROR else {
                        throw TreeError(.compression, "compression failed (zlib status \(status))")
                    }
                    // Done: the last block's end, or a sync flush that left room over.
                    if status == Z_STREAM_END || (!isLast && stream.pointee.avail_out > 0) { break }
                }
            }
            output.removeLast(output.count - produced)
            return Output(bytes: output, crc: inputCRC, inputCount: input.count)
        }
    }

    /// A deflated block.
    struct Output: Sendable {
        var bytes: [UInt8]
        var crc: uLong
        var inputCount: Int
    }

    let threads: Int
    private let condition = NSCondition()
    private var jobs: [Job] = []
    private var done: [Int: Result<Output, any Error>] = [:]
    private var isClosed = false

    init(threads: Int) {
        self.threads = threads
        for _ in 0..<threads {
            let thread = Thread { [self] in work() }
            thread.name = "gzip"
            thread.start()
        }
    }

    func add(_ job: Job) {
        condition.withLock {
            jobs.append(job)
            condition.signal()
        }
    }

    /// The output of block `index` once it is done, waiting for it when `waiting`, else nil if it is not yet.
    func take(_ index: Int, waiting: Bool) -> Result<Output, any Error>? {
        condition.withLock {
            while done[index] == nil, waiting, !isClosed { condition.wait() }
            return done.removeValue(forKey: index)
        }
    }

    /// Stops the threads once they finish the block they deflate.
    func close() {
        condition.withLock {
            isClosed = true
            condition.broadcast()
        }
    }

    private func work() {
        while true {
            let job: Job? = condition.withLock {
                while jobs.isEmpty, !isClosed { condition.wait() }
                return isClosed ? nil : jobs.removeFirst()
            }
            guard let job else { return }
            let result = Result { try job.run() }
            condition.withLock {
                done[job.index] = result
                condition.broadcast()
            }
        }
    }
}
