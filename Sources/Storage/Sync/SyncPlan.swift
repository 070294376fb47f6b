import FirebaseTree
import Foundation

/// What a sync writes, gathered while it compares: every path whose rows go (the nodes the store holds that the
/// source lacks, and those it rewrites), and a JSON document holding each rewritten node at its path, which the
/// import pass then loads. Both are kept in temporary files, so that a sync of any size costs bounded memory.
///
/// The comparison hands the nodes over in RTDB order of path, none below another, so the document is written
/// as it comes: the objects on the way to a node stay open until a node elsewhere closes them.
final class SyncPlan {
    private let document: TemporaryFile
    private let paths: TemporaryFile
    private var writer = JSONTextWriter(options: .init(rendersArrays: false))
    /// The keys of the objects open in the document, from the root.
    private var open: [String] = []
    private var encodedPath: [UInt8] = []
    /// Paths whose rows go.
    private(set) var pathCount = 0
    private var isFinished = false
    /// The posts and chat copies the paths reach, noted as they come.
    private(set) var touched = TouchedKeys()
    /// The children of /posts the paths go inside of (whose shape is their children's: `posts_misshapen`);
    /// nil past `TouchedKeys.namedLimit` of them (every child is asked then).
    private(set) var postsWrittenInside: Set<TreeKey>? = []

    /// An empty plan, with its files in `temporaryDirectory`.
    init(temporaryDirectory: String) throws {
        document = try TemporaryFile(in: temporaryDirectory)
        paths = try TemporaryFile(in: temporaryDirectory)
        writer.beginObject()
    }

    /// Whether the plan removes the node the sync compares whole (the source holds nothing there).
    private(set) var removesItsNode = false

    /// The node at `path` becomes `json` (compact JSON from the comparison), or goes when it is nil;
    /// `isItsNode` says that `path` is the node the sync compares.
    func rewrite(_ path: [String], json: NodeText?, isItsNode: Bool = false) throws {
        precondition(!isFinished, "a finished plan takes no more nodes")
        if isItsNode, json == nil { removesItsNode = true }
        try appendPath(path)
        if path.count >= 3, path[0] == TreeTable.feedPosts.rootKey, var ids = postsWrittenInside {
            postsWrittenInside = nil
            ids.insert(TreeKey(path[1]))
            postsWrittenInside = ids.count > TouchedKeys.namedLimit ? nil : ids
        }
        guard let json else { return }
        guard let key = path.last else {
            // The whole tree: the document is that node.
            writer = JSONTextWriter(options: .init(rendersArrays: false))
            writer.beginRawValue()
            try append(json)
            isFinished = true
            return try flush()
        }
        let parent = path.dropLast()
        var shared = 0
        // Keys compared by their bytes: "é" and "e\u{301}" are two children.
        while shared < open.count, shared < parent.count,
            FirebaseKey.same(open[shared], parent[parent.startIndex + shared])
        {
            shared += 1
        }
        for _ in shared..<open.count { writer.endObject() }
        open.removeLast(open.count - shared)
        for key in parent.dropFirst(shared) {
            writer.key(key)
            writer.beginObject()
            open.append(key)
        }
        writer.key(key)
        writer.beginRawValue()
        try append(json)
        if writer.bytes.count >= 1 << 20 { try flush() }
    }

    /// Appends a node's text to the document, a chunk at a time.
    private func append(_ text: NodeText) throws {
        try text.withChunks { chunk in
            writer.appendRaw(chunk.assumingMemoryBound(to: UInt8.self))
            if writer.bytes.count >= 1 << 20 { try flush() }
        }
    }

    /// Closes the document; nothing can be added after.
    func finish() throws {
        if !isFinished {
            for _ in open { writer.endObject() }
            open = []
            writer.endObject()
            isFinished = true
        }
        try flush()
        try paths.flush()
    }

    /// The document, from its start (after `finish`).
    var documentSource: TemporaryFile.Reader { TemporaryFile.Reader(document) }

    /// Calls `body` with the paths whose rows go, in order, at most `batch` at a time (after `finish`).
    func forEachPaths(batch: Int, _ body: ([[String]]) throws -> Void) throws {
        var reader = PathReader(file: paths)
        var pending: [[String]] = []
        while let path = try reader.next() {
            pending.append(path)
            if pending.count == batch {
                try body(pending)
                pending.removeAll(keepingCapacity: true)
            }
        }
        if !pending.isEmpty { try body(pending) }
    }

    private func flush() throws {
        try writer.drain { try document.append(UnsafeRawBufferPointer($0)) }
        try document.flush()
    }

    /// Appends `path` to the paths file: its key count, then each key's length and UTF-8 bytes.
    private func appendPath(_ path: [String]) throws {
        encodedPath.removeAll(keepingCapacity: true)
        Self.appendLength(path.count, to: &encodedPath)
        for key in path {
            Self.appendLength(key.utf8.count, to: &encodedPath)
            encodedPath.append(contentsOf: key.utf8)
        }
        try encodedPath.withUnsafeBytes { try paths.append($0) }
        pathCount += 1
        touched.note(path)
    }

    private static func appendLength(_ length: Int, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: UInt32(length).littleEndian) { bytes.append(contentsOf: $0) }
    }

    /// Reads back what `appendPath` wrote.
    private struct PathReader {
        let file: TemporaryFile
        var offset = 0

        mutating func next() throws -> [String]? {
            guard let count = try length() else { return nil }
            var path: [String] = []
            path.reserveCapacity(count)
            for _ in 0..<count {
                guard let length = try length() else { throw Self.truncated }
                var bytes = [UInt8](repeating: 0, count: length)
                let read = try bytes.withUnsafeMutableBytes { try file.read(at: offset, into: $0) }
                guard read == length else { throw Self.truncated }
                offset += length
                path.append(String(decoding: bytes, as: UTF8.self))
            }
            return path
        }

        private mutating func length() throws -> Int? {
            var value: UInt32 = 0
            let read = try withUnsafeMutableBytes(of: &value) { try file.read(at: offset, into: $0) }
            if read == 0 { return nil }
            guard read == 4 else { throw Self.truncated }
            offset += 4
            return Int(UInt32(littleEndian: value))
        }

        private static let truncated = TreeError(.scratchSpace, "a sync's list of paths was cut short")
    }
}
