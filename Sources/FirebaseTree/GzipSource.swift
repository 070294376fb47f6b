import CZlib

/// Decompresses a gzip stream (Firebase's daily backups are gzipped) as it is read, through zlib; concatenated
/// gzip members are read one after another, as `gunzip` does.
public final class GzipSource: ByteSource {
    private var base: any ByteSource
    private let name: String
    private let stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
    private let input = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 16, alignment: 1)
    private var isInputEnded = false
    private var isMemberComplete = false

    /// Reads gzip data from `base`; `name` is used in error messages.
    public init(_ base: some ByteSource, name: String) throws {
        self.base = base
        self.name = name
        stream.initialize(to: z_stream())
        // 15 + 32: the largest window, and detect a gzip or zlib header.
        guard inflateInit2_(stream, 15 + 32, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            throw TreeError(.malformedInput, "cannot start decompressing \(name)")
        }
    }

    deinit {
        inflateEnd(stream)
        stream.deallocate()
        input.deallocate()
    }

    /// Decompresses into `buffer`; returns 0 at the end of the last member.
    public func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        while true {
            if stream.pointee.avail_in == 0, !isInputEnded {
                let count = try base.read(into: input)
                if count == 0 {
                    isInputEnded = true
                } else {
                    stream.pointee.next_in = input.baseAddress?.assumingMemoryBound(to: Bytef.self)
                    stream.pointee.avail_in = UInt32(count)
                }
            }
            if stream.pointee.avail_in == 0, isInputEnded {
                guard isMemberComplete else {
                    throw TreeError(.malformedInput, "\(name) is truncated: the gzip stream ends early")
                }
                return 0
            }
            if isMemberComplete {
                // Another gzip member follows.
                inflateReset(stream)
                isMemberComplete = false
            }
            stream.pointee.next_out = buffer.baseAddress?.assumingMemoryBound(to: Bytef.self)
            stream.pointee.avail_out = UInt32(buffer.count)
            let status = inflate(stream, Z_NO_FLUSH)
            let produced = buffer.count - Int(stream.pointee.avail_out)
            switch status {
            case Z_STREAM_END: isMemberComplete = true
            case Z_OK, Z_BUF_ERROR: break
            default:
                let reason = stream.pointee.msg.map { String(cString: $0) } ?? "error \(status)"
                throw TreeError(.malformedInput, "\(name) is not valid gzip data: \(reason)")
            }
            if produced > 0 { return produced }
        }
    }
}
