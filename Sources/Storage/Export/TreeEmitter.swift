import FirebaseTree
import Foundation

/// Writes a tree as JSON from its parts, given in export path order: each part is a subtree at a path (a typed
/// row's record, an unmapped leaf) or a typed row written straight from its columns. Objects above the parts
/// stream: they open and close as the paths move, and the JSON goes to `sink` as it is written, so memory holds
/// one part, the small in-memory records that later parts may still fall inside, and a bounded buffer per object
/// that may still turn out to be an array.
///
/// Two layouts are only known once an object's children have all been seen: the SDKs render an object as an
/// array when every key is an array index and the largest is below twice their count, and a leaf with a priority
/// is written `{".value": v, ".priority": p}` although `.priority` comes first. An object whose first key is an
/// index therefore writes its children into an `ArrayFrame` (memory up to a budget, then an unnamed temporary
/// file) and copies them out as an array or an object when it closes; one that meets a key that is not an index
/// turns into a streamed object at once. A priority waits for its node's next child. The work and the memory per
/// child are constant either way, so any shape of keys exports in time linear in its children.
final class TreeEmitter {
    /// The output options.
    let options: JSONTextWriter.Options
    /// The path (relative to the emitter's root) of an object that may be an array and has filled its frame's
    /// memory: told at most how many children it has (`answerCountRequest`), it streams as an object as soon as
    /// its indexes run past twice that many instead of going on to a temporary file. The emitter asks and goes
    /// on; whoever feeds it answers when its connection is free, between fetches.
    var countRequest: [String]? { requestingFrame == nil ? nil : requestPath }
    private var requestPath: [String] = []
    /// The frame `countRequest` is about; a frame written out before the answer came wants none.
    private weak var requestingFrame: ArrayFrame?
    private var writer: JSONTextWriter
    private let sink: (UnsafeBufferPointer<UInt8>) throws -> Void
    /// The open nodes, the root first (once there is any part).
    private var levels: [Level] = []
    /// Indexes in `levels` of the open nodes writing into array frames, innermost last.
    private var frameLevels: [Int] = []
    /// The last part added, held until it is known that no later part falls inside it.
    private var pending: (path: [String], value: TreeValue)?
    /// The parent given to the last `addDirectly`, while the next direct child under it needs nothing but its key
    /// and value written: it is the innermost open node, a streamed object with no record fields left, and no
    /// frame is open. Nearly every row of a typed table is such a child, and comparing a reused path array is
    /// one pointer comparison.
    private var directParent: [String]? {
        didSet { directParentIdentity = directParent?.withUnsafeBufferPointer { UnsafeRawPointer($0.baseAddress) } }
    }
    /// The address of `directParent`'s elements: a parent passed again as the same array is known by it without
    /// copying `directParent` out of the emitter (a retain and a release per row).
    private var directParentIdentity: UnsafeRawPointer?
    /// Bytes the frames held in memory at most, and wrote to temporary files in all (for tests and reports).
    private(set) var peakFrameBytes = 0
    private(set) var spilledBytes = 0

    /// Answers `countRequest` with at most how many children its node has (nil: not known).
    func answerCountRequest(_ bound: Int?) {
        requestingFrame?.childCountBound = bound
        requestingFrame = nil
    }

    /// Bytes the main writer collects before handing them to `sink`.
    static let chunkSize = 1 << 18
    private struct Level {
        /// The node's key in its parent; nil for the root.
        var key: String?

        /// The key of a level below the root, which always has one.
        var childKey: String {
            guard let key else { preconditionFailure("only the root level has no key") }
            return key
        }
        var state: State
        /// The node's children that came with a record (in export order), written as the parts pass them.
        var overlay: ArraySlice<(key: String, value: TreeValue)> = []
    }

    private enum State {
        /// Nothing written yet: the first child decides the layout.
        case fresh
        /// Written as an object into the enclosing writer.
        case object
        /// Children go to a frame until the layout is known.
        case deferred(ArrayFrame)
        /// Only `.priority` so far; it is written once the next child shows whether the node is a leaf.
        case priority(TreeValue)
        /// Written whole (a leaf, or a leaf with a priority).
        case written
    }

    /// Bytes of children an array frame keeps in memory before it moves them to its temporary file.
    let frameMemoryBudget: Int

    /// How many objects enclose the emitter's root in the document its JSON lands in: 0 for a document of its
    /// own, 1 for the value of a child of the root rendered apart (`addRendered`).
    let nesting: Int

    /// An emitter handing its JSON to `sink` in chunks; with a `nesting`, the value of a node that deep, laid out
    /// as it is there, and nothing at all when there are no parts.
    init(
        options: JSONTextWriter.Options, frameMemoryBudget: Int = 1 << 20, nesting: Int = 0,
        sink: @escaping (UnsafeBufferPointer<UInt8>) throws -> Void
    ) {
        self.options = options
        self.frameMemoryBudget = frameMemoryBudget
        self.nesting = nesting
        writer =
            nesting == 0 ? JSONTextWriter(options: options) : JSONTextWriter(options: options, objectDepth: nesting)
        self.sink = sink
    }

    // MARK: Parts

    /// Adds the subtree `value` at `path`. Paths come in export order; a part at or below the previous one's path
    /// merges into it (objects child by child, a later leaf replacing what was there).
    func add(_ path: [String], _ value: TreeValue) throws {
        directParent = nil
        var path = path
        var value = value
        if !options.keepsPriorities {
            if path.last == FirebaseKey.priority { return }
            if path.last == FirebaseKey.value { path.removeLast() }
            if case .object(var children) = value,
                children[FirebaseKey.priority] != nil || children[FirebaseKey.value] != nil
            {
                if let leaf = children[FirebaseKey.value] {
                    value = leaf
                } else {
                    children[FirebaseKey.priority] = nil
                    guard !children.isEmpty else { return }
                    value = .object(children)
                }
            }
        }
        if let held = pending {
            if FirebaseKey.isPath(path[...], atOrBelow: held.path[...]) {
                pending = nil
                if path.count == held.path.count {
                    pending = (path, held.value.merging(value))
                    return
                }
                // Later parts fall inside the held one: it becomes an open node whose fields interleave with them
                // (a leaf there is replaced).
                if case .object(let children) = held.value {
                    if held.path.isEmpty {
                        if levels.isEmpty { levels.append(Level(key: nil, state: .fresh)) }
                        levels[0].overlay = Self.ordered(children)
                    } else if let last = held.path.last {
                        try navigate(toParentOf: held.path)
                        try open(last, in: levels.count - 1, overlay: children)
                    }
                }
            } else {
                pending = nil
                try write(held.path, held.value)
            }
        }
        pending = (path, value)
    }

    /// Writes a typed table's row, whose path is `parent` and its last key column, straight from the row's text,
    /// and returns true; false when the row must be added the general way (`table.part(from:)`): a row
    /// `writesDirectly` refuses, or one `addDirectly(key:under:_:)` refuses.
    func addDirectly(_ row: some ExportRow, of table: TreeTable, under parent: [String]) throws -> Bool {
        guard table.writesDirectly(row) else { return false }
        return try row.withText(table.keyDepth - 1) { key in
            // A key column is never NULL; were it, the general way would say so.
            guard let key else { return false }
            return try addDirectly(key: key, under: parent) { table.writeValue(of: row, to: &$0) }
        }
    }

    /// Writes the child `key` of the node at `parent` with `writeValue`, straight from bytes, and returns true;
    /// false, having written nothing, when the child must be added the general way: its key starts with `.`, it
    /// lies inside the record held last, or a record's field is at the same path. The caller guarantees that no
    /// later part lies at or below the child.
    func addDirectly(
        key: UnsafeBufferPointer<UInt8>, under parent: [String], _ writeValue: (inout JSONTextWriter) -> Void
    ) throws -> Bool {
        guard key.first != UInt8(ascii: ".") else { return false }
        if isDirectParent(parent) {
            writer.key(utf8: key)
            writeValue(&writer)
            if writer.bytes.count >= Self.chunkSize { try writer.drain(sink) }
            return true
        }
        directParent = nil
        if let held = pending {
            if FirebaseKey.isPath(parent[...], atOrBelow: held.path[...]) { return false }
            pending = nil
            try write(held.path, held.value)
        }
        try navigate(toParentOf: parent, leafIsParent: true)
        let level = levels.count - 1
        if !levels[level].overlay.isEmpty {
            try flushOverlay(of: level, before: String(decoding: key, as: UTF8.self))
            if let first = levels[level].overlay.first, FirebaseKey.same(first.key, key) { return false }
        }
        try beginChild(key, of: level)
        withWriter(forContentOf: level, writeValue)
        try relieve()
        if case .object = levels[level].state, levels[level].overlay.isEmpty, frameLevels.isEmpty {
            directParent = parent
        }
        return true
    }

    /// Whether `parent` is `directParent`: the same array (one comparison of addresses), or the same keys.
    private func isDirectParent(_ parent: [String]) -> Bool {
        if let identity = directParentIdentity,
            parent.withUnsafeBufferPointer({ UnsafeRawPointer($0.baseAddress) == identity })
        {
            return true
        }
        guard let known = directParent else { return false }
        return FirebaseKey.samePath(known, parent)
    }

    /// Writes what is held and closes every open node; `null` when there were no parts at all. Hands the rest
    /// of the JSON to the sink.
    func finish() throws {
        directParent = nil
        if let held = pending {
            pending = nil
            try write(held.path, held.value)
        }
        while !levels.isEmpty { try close() }
        if nesting == 0 {
            if !hasWrittenRoot { writer.null() }
            writer.finish()
        }
        try writer.drain(sink)
    }

    /// Whether anything was written for the root (a nested emitter writes nothing when it had no parts).
    private(set) var hasWrittenRoot = false

    /// Writes the child `key` of the root whose value another emitter rendered with a `nesting` of 1:
    /// `readValue` hands its JSON over in pieces. Keys before it must have been added, and none may follow
    /// inside it.
    func addRendered(
        _ key: String, _ readValue: (_ append: (UnsafeBufferPointer<UInt8>) throws -> Void) throws -> Void
    ) throws {
        directParent = nil
        if let held = pending {
            pending = nil
            try write(held.path, held.value)
        }
        try navigate(toParentOf: [key])
        try flushOverlay(of: 0, before: key)
        try beginChild(key, of: 0)
        withWriter(forContentOf: 0) { $0.beginRawValue() }
        try readValue { piece in
            withWriter(forContentOf: 0) { $0.appendRaw(piece) }
            try relieve()
        }
    }

    // MARK: Placing parts

    /// Writes the part `value` at `path` now.
    private func write(_ path: [String], _ value: TreeValue) throws {
        guard let key = path.last else {
            // The whole document as one part (a `get` of a record).
            if levels.isEmpty { levels.append(Level(key: nil, state: .fresh)) }
            try writeWhole(value, at: 0)
            return
        }
        try navigate(toParentOf: path)
        try writeChild(key, value, of: levels.count - 1)
    }

    /// Closes the open nodes that do not lead to `path`'s parent and opens those that do (for `leafIsParent`,
    /// `path` is the parent itself).
    private func navigate(toParentOf path: [String], leafIsParent: Bool = false) throws {
        let target = leafIsParent ? path.count : path.count - 1
        if levels.isEmpty { levels.append(Level(key: nil, state: .fresh)) }
        var common = 0
        while common < target, common + 1 < levels.count, FirebaseKey.same(levels[common + 1].childKey, path[common]) {
            common += 1
        }
        while levels.count > common + 1 { try close() }
        for depth in common..<target {
            try open(path[depth], in: depth, overlay: [:])
        }
    }

    /// Opens the child `key` of the node at `level` (which must be innermost), with `overlay` as fields already
    /// known; a record field of the parent at that key joins them.
    private func open(_ key: String, in level: Int, overlay: [TreeKey: TreeValue]) throws {
        try flushOverlay(of: level, before: key)
        var fields = overlay
        if let first = levels[level].overlay.first, FirebaseKey.same(first.key, key) {
            levels[level].overlay.removeFirst()
            if case .object(let children) = first.value {
                fields = TreeValue.object(children).merging(.object(overlay)).children ?? [:]
            }
        }
        levels.append(Level(key: key, state: .fresh, overlay: Self.ordered(fields)))
    }

    /// Closes the innermost node: writes its remaining fields, then its end, or the array or object its frame
    /// held.
    private func close() throws {
        let level = levels.count - 1
        try flushOverlay(of: level, before: nil)
        switch levels[level].state {
        case .fresh, .written:
            break
        case .object:
            withWriter(forContentOf: level) { $0.endObject() }
        case .deferred(let frame):
            frameLevels.removeLast()
            try writeOut(frame, of: level, asArray: frame.isArray)
        case .priority(let priority):
            // A node holding nothing but a priority.
            try startObject(level)
            withWriter(forContentOf: level) {
                $0.key(FirebaseKey.priority)
                $0.value(priority)
                $0.endObject()
            }
        }
        levels.removeLast()
        try relieve()
    }

    /// Writes a child of the node at `level` (innermost), merged with a record field at the same key.
    private func writeChild(_ key: String, _ value: TreeValue, of level: Int) throws {
        try flushOverlay(of: level, before: key)
        var value = value
        if let first = levels[level].overlay.first, FirebaseKey.same(first.key, key) {
            levels[level].overlay.removeFirst()
            value = first.value.merging(value)
        }
        if key == FirebaseKey.priority {
            guard options.keepsPriorities else { return }
            if case .fresh = levels[level].state {
                levels[level].state = .priority(value)
                return
            }
        } else if key == FirebaseKey.value {
            // A leaf with a priority (or a lone `.value`): the node itself is `{".value": v, ".priority": p}`.
            switch levels[level].state {
            case .fresh:
                return try writeWhole(options.keepsPriorities ? .object([TreeKey(key): value]) : value, at: level)
            case .priority(let priority):
                return try writeWhole(
                    options.keepsPriorities
                        ? .object([TreeKey(key): value, TreeKey(FirebaseKey.priority): priority]) : value,
                    at: level)
            default:
                break
            }
        }
        try beginChild(key, of: level)
        withWriter(forContentOf: level) { $0.value(value) }
        try relieve()
    }

    /// Writes the node at `level` whole as `value`, in place of any children.
    private func writeWhole(_ value: TreeValue, at level: Int) throws {
        try announce(level)
        withWriter(forContentOf: level - 1) { $0.value(value) }
        levels[level].state = .written
        if level == 0 { hasWrittenRoot = true }
        try relieve()
    }

    /// Writes the record fields of the node at `level` that come before `key` (all of them for nil).
    private func flushOverlay(of level: Int, before key: String?) throws {
        while let first = levels[level].overlay.first,
            key.map({ FirebaseKey.exportPrecedes(first.key, $0) }) ?? true
        {
            levels[level].overlay.removeFirst()
            try writeChild(first.key, first.value, of: level)
        }
    }

    // MARK: Layout

    /// Makes the node at `level` ready for its child `key`: decides its layout on its first child, turns a frame
    /// into an object when `key` is no array index, then writes the key (or starts the frame's next element).
    private func beginChild(_ key: String, of level: Int) throws {
        var key = key
        try key.withUTF8 { try beginChild($0, of: level) }
    }

    /// `beginChild(_:of:)` of a key given as UTF-8.
    private func beginChild(_ key: UnsafeBufferPointer<UInt8>, of level: Int) throws {
        let index = FirebaseKey.arrayIndex(utf8: key).flatMap { $0 <= ArrayFrame.maximumIndex ? $0 : nil }
        switch levels[level].state {
        case .fresh:
            if options.rendersArrays, let index {
                let frame = ArrayFrame(
                    options: options, objectDepth: depthOfContent(level), memoryBudget: frameMemoryBudget)
                levels[level].state = .deferred(frame)
                frameLevels.append(level)
                try frame.begin(index)
                return
            }
            try startObject(level)
        case .priority(let priority):
            try startObject(level)
            withWriter(forContentOf: level) {
                $0.key(FirebaseKey.priority)
                $0.value(priority)
            }
        case .deferred(let frame):
            if requestingFrame == nil, frame.wantsCountBound {
                frame.wantsCountBound = false
                requestPath = path(of: level)
                requestingFrame = frame
            }
            if let index, !frame.cannotBeArray(reaching: index) {
                try frame.begin(index)
                return
            }
            // A key that is no index, or an index too large for the node's children to make an array: an object
            // after all, streamed from here on.
            frameLevels.removeLast()
            try writeOut(frame, of: level, asArray: false, keepsOpen: true)
            levels[level].state = .object
        case .object, .written:
            break
        }
        withWriter(forContentOf: level) { $0.key(utf8: key) }
    }

    /// Writes the node at `level`'s key into its parent and opens it as a streamed object.
    private func startObject(_ level: Int) throws {
        try announce(level)
        withWriter(forContentOf: level - 1) { $0.beginObject() }
        levels[level].state = .object
    }

    /// Writes the key of the node at `level` into its parent (whose layout its key may decide), or nothing for
    /// the root.
    private func announce(_ level: Int) throws {
        guard level > 0 else {
            hasWrittenRoot = true
            return
        }
        try beginChild(levels[level].childKey, of: level - 1)
    }

    /// Copies a frame's children into the enclosing writer as an array (holes as null) or an object, closing
    /// it unless `keepsOpen` (an object that goes on streaming).
    private func writeOut(_ frame: ArrayFrame, of level: Int, asArray: Bool, keepsOpen: Bool = false) throws {
        try frame.end()
        try announce(level)
        let parent = level - 1
        withWriter(forContentOf: parent) { asArray ? $0.beginArray() : $0.beginObject() }
        var next = 0
        try frame.forEachElement { index, read in
            if asArray {
                withWriter(forContentOf: parent) { writer in
                    while next < index {
                        writer.null()
                        next += 1
                    }
                    writer.beginRawValue()
                }
                next = index + 1
            } else {
                withWriter(forContentOf: parent) { writer in
                    writer.key(String(index))
                    writer.beginRawValue()
                }
            }
            var pendingSpaces = 0
            try read { piece in
                withWriter(forContentOf: parent) { writer in
                    if asArray && options.isPretty {
                        writer.appendRawOneLevelShallower(piece, pendingSpaces: &pendingSpaces)
                    } else {
                        writer.appendRaw(piece)
                    }
                }
                try relieve()
            }
        }
        spilledBytes += frame.spilledBytes
        if keepsOpen { return }
        withWriter(forContentOf: parent) { asArray ? $0.endArray() : $0.endObject() }
    }

    /// The keys of the node at `level`, from the emitter's root.
    private func path(of level: Int) -> [String] {
        levels.dropFirst().prefix(level).map(\.childKey)
    }

    /// How many objects enclose the children of the node at `level` when every open node is laid out as one.
    private func depthOfContent(_ level: Int) -> Int { nesting + level + 1 }

    // MARK: Writers

    /// Runs `body` on the writer that receives the content of the node at `level`: the innermost frame at or
    /// above it, else the main writer.
    private func withWriter<R>(forContentOf level: Int, _ body: (inout JSONTextWriter) throws -> R) rethrows -> R {
        if let owner = frameLevels.last(where: { $0 <= level }), case .deferred(let frame) = levels[owner].state {
            return try body(&frame.writer)
        }
        return try body(&writer)
    }

    /// Hands the main writer's bytes to the sink, and frames' bytes to their files, once they are large.
    private func relieve() throws {
        var held = 0
        for owner in frameLevels {
            guard case .deferred(let frame) = levels[owner].state else { continue }
            try frame.relieve()
            held += frame.heldByteCount
        }
        peakFrameBytes = max(peakFrameBytes, held)
        if writer.bytes.count >= Self.chunkSize { try writer.drain(sink) }
    }

    // MARK: Helpers

    private static func ordered(_ fields: [TreeKey: TreeValue]) -> ArraySlice<(key: String, value: TreeValue)> {
        ArraySlice(
            fields.map { (key: $0.key.string, value: $0.value) }.sorted { FirebaseKey.exportPrecedes($0.key, $1.key) })
    }
}

/// The children of an object that may still be an array, written while its layout is unknown: each child's
/// JSON (laid out as an object member would be) goes to a `SpillBuffer`, and a table of (index, end offset)
/// entries to another, so that memory holds at most their budgets whatever the number and size of the children.
final class ArrayFrame {
    /// Writes the current child's JSON; drained into `data` as it grows.
    var writer: JSONTextWriter
    private let data: SpillBuffer
    /// 12 bytes per child: its index (4, little-endian) and where its JSON ends in `data` (8).
    private let table: SpillBuffer
    private var count = 0
    private var largestIndex = -1
    private var current: Int?

    /// Keys above this are taken as object keys at once: an array needs more than half as many children as its
    /// largest index, so such a node would have over a billion children.
    static let maximumIndex = Int(Int32.max)

    init(options: JSONTextWriter.Options, objectDepth: Int, memoryBudget: Int) {
        writer = JSONTextWriter(options: options, objectDepth: objectDepth)
        data = SpillBuffer(memoryBudget: memoryBudget)
        table = SpillBuffer(memoryBudget: max(12, memoryBudget / 4))
    }

    /// Whether the SDKs render these children as an array: the largest index is below twice their count.
    var isArray: Bool { largestIndex < 2 * count }

    /// Bytes held in memory now.
    var heldByteCount: Int { data.heldByteCount + writer.bytes.count + table.heldByteCount }

    /// Bytes moved to temporary files.
    var spilledBytes: Int { data.spilledByteCount + table.spilledByteCount }

    /// At most how many children the node has, once known (`TreeEmitter.countRequest`).
    var childCountBound: Int?

    /// Whether the frame has moved children to its file and not yet asked how many children the node has.
    var wantsCountBound: Bool {
        get { data.spilledByteCount > 0 && !hasAskedForBound }
        set { hasAskedForBound = !newValue }
    }
    private var hasAskedForBound = false

    /// Whether a child at `index` would leave these children no way to be an array, by what is known of their
    /// number: an array needs its largest index below twice its count.
    func cannotBeArray(reaching index: Int) -> Bool {
        guard let childCountBound else { return false }
        return max(largestIndex, index) >= 2 * childCountBound
    }

    /// Starts the child at `index` (indexes come in increasing order).
    func begin(_ index: Int) throws {
        try endElement()
        current = index
        count += 1
        largestIndex = max(largestIndex, index)
    }

    /// Ends the last child.
    func end() throws {
        try endElement()
    }

    private func endElement() throws {
        guard let index = current else { return }
        current = nil
        try relieve()
        var entry = [UInt8](repeating: 0, count: 12)
        withUnsafeBytes(of: UInt32(index).littleEndian) { entry.replaceSubrange(0..<4, with: $0) }
        withUnsafeBytes(of: UInt64(data.count + writer.bytes.count).littleEndian) {
            entry.replaceSubrange(4..<12, with: $0)
        }
        try table.append(entry)
    }

    /// Moves the writer's bytes into `data` once there are many of them (all of them with `force`).
    func relieve(force: Bool = false) throws {
        guard writer.bytes.count >= (force ? 1 : min(1 << 16, data.memoryBudget)) else { return }
        try writer.drain { try data.append($0) }
    }

    /// Calls `body` for each child in order with its index and a function that reads its JSON in pieces. Both
    /// buffers are read front to back in large pieces, however small the children.
    func forEachElement(
        _ body: (_ index: Int, _ read: ((UnsafeBufferPointer<UInt8>) throws -> Void) throws -> Void) throws -> Void
    ) throws {
        try relieve(force: true)
        var json = SequentialReader(data)
        var carry: [UInt8] = []
        try table.read(0..<table.count, pieceSize: 12 << 12) { piece in
            carry.append(contentsOf: piece)
            let whole = carry.count / 12 * 12
            var entries: [(index: Int, end: Int)] = []
            carry.withUnsafeBytes { raw in
                for offset in stride(from: 0, to: whole, by: 12) {
                    let index = Int(UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: offset, as: UInt32.self)))
                    let end = Int(UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: offset + 4, as: UInt64.self)))
                    entries.append((index, end))
                }
            }
            carry.removeFirst(whole)
            for entry in entries {
                try body(entry.index) { reader in try json.read(upTo: entry.end, reader) }
            }
        }
    }
}

/// Reads a `SpillBuffer` front to back in pieces of 1 MB, handing out any range that starts where the last ended.
private struct SequentialReader {
    let buffer: SpillBuffer
    private var piece: [UInt8] = []
    /// Where `piece` starts in the buffer, and how much of it was handed out.
    private var pieceStart = 0
    private var used = 0

    init(_ buffer: SpillBuffer) {
        self.buffer = buffer
    }

    /// Hands the bytes from the last end up to `end` to `body`, in pieces.
    mutating func read(upTo end: Int, _ body: (UnsafeBufferPointer<UInt8>) throws -> Void) throws {
        while pieceStart + used < end {
            if used == piece.count {
                pieceStart += piece.count
                used = 0
                piece.removeAll(keepingCapacity: true)
                let stop = min(buffer.count, pieceStart + (1 << 20))
                try buffer.read(pieceStart..<stop) { piece.append(contentsOf: $0) }
            }
            let stop = min(piece.count, end - pieceStart)
            try piece.withUnsafeBufferPointer { try body(UnsafeBufferPointer(rebasing: $0[used..<stop])) }
            used = stop
        }
    }
}
