import CZlib

/// Compresses bytes into a gzip stream as they are written (`export backup.json.gz`), through zlib, handing each
/// compressed chunk to `sink`.
public final class GzipWriter {
    private let sink: (UnsafeBufferPointer<UInt8>) throws -> Void
    private let stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
    private let output = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: 1 << 16)

    /// A writer at zlib's default level (6, as gzip's); compressed bytes go to `sink`.
    public init(level: Int32 = Z_DEFAULT_COMPRESSION, sink: @escaping (UnsafeBufferPointer<UInt8>) throws -> Void)
        throws
    {
        self.sink = sink
        stream.initialize(to: z_stream())
        // 15 + 16: the largest window, with a gzip header and trailer.
        guard
            deflateInit2_(
                stream, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY, ZLIB_VERSION,
                Int32(MemoryLayout<z_stream>.size)) == Z_OK
        else {
            throw TreeError(.compression, "cannot start compressing")
        }
    }

    deinit {
        deflateEnd(stream)
        stream.deallocate()
        output.deallocate()
    }

    /// Compresses `bytes`.
    public func write(_ bytes: UnsafeBufferPointer<UInt8>) throws {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        stream.pointee.next_in = UnsafeMutablePointer(mutating: base)
        stream.pointee.avail_in = UInt32(bytes.count)
        try run(Z_NO_FLUSH)
    }

    /// Ends the stream: the last compressed bytes and the gzip trailer.
    public func finish() throws {
        stream.pointee.next_in = nil
        stream.pointee.avail_in = 0
        try run(Z_FINISH)
    }

    private func run(_ flush: Int32) throws {
        repeat {
            stream.pointee.next_out = output.baseAddress
            stream.pointee.avail_out = UInt32(output.count)
            let status = deflate(stream, flush)
            guard status == Z_OK || status == Z_STREAM_END || status == Z_BUF_ERROR else {
                throw TreeError(.compression, "compression failed (zlib status \(status))")
            }
            let produced = output.count - Int(stream.pointee.avail_out)
            if produced > 0 { try sink(UnsafeBufferPointer(rebasing: output[..<produced])) }
            if flush == Z_FINISH && status == Z_STREAM_END { return }
        } while stream.pointee.avail_out == 0 || (flush == Z_FINISH)
    }
}
