import FirebaseTree
import Foundation

/// Stores again, whole and in their shape, the `/posts/{id}` nodes an importer told were stored otherwise than it
/// began to store them (`ImportFinding.reshaped`: an owner's posts streamed before a leaf made the node an AppCoda
/// feed post). Each is read back from the rows just written into a temporary file, its rows go, and the file is
/// imported again with the nodes' shapes known, so that how a node is stored never depends on the order of its
/// children. Run once the reading is done, by whichever import (or sync) read the nodes, on its connection and
/// loader.
final class PostsReshape {
    /// What the export reads from and the rows go from: the import's own (its tables, or its twins).
    let export: TreeExport
    let treeRows: TreeRows

    /// The nodes found so far, each by its id under /posts with its shape (true: a feed post).
    private(set) var nodes: [TreeKey: Bool] = [:]

    init(export: TreeExport, treeRows: TreeRows) {
        self.export = export
        self.treeRows = treeRows
    }

    /// Notes a finding; false when it is no reshape (for the finding's other handlers).
    func note(_ finding: ImportFinding) -> Bool {
        guard case .reshaped(let path, let isFeedPost) = finding, path.count == 2 else { return false }
        nodes[TreeKey(path[1])] = isFeedPost
        return true
    }

    /// Reads the noted nodes back, deletes their rows (`deleteRows`, which says how many per table), and imports
    /// them again through `loader` with their shapes known; the rows deleted and stored, per table. Nothing when
    /// no node was noted.
    func reshape(
        loader: TableLoader, deleteRows: ([String]) throws -> [TreeTable: Int],
        onReject: @escaping (ImportReject) throws -> Void
    ) throws -> (deleted: [TreeTable: Int], stored: [TreeTable: Int]) {
        guard !nodes.isEmpty, let root = TreeTable.feedPosts.rootKey else { return ([:], [:]) }
        try loader.flush()
        let file = try StorageError.converting { try TemporaryFile() }
        var opening: [UInt8] = Array("{".utf8)
        for (index, id) in nodes.keys.map(\.string).sorted(by: FirebaseKey.precedes).enumerated() {
            if index > 0 { opening.append(UInt8(ascii: ",")) }
            var key = id
            key.withUTF8 { JSONTextWriter.appendQuoted($0, to: &opening) }
            opening.append(UInt8(ascii: ":"))
            try opening.withUnsafeBytes { try file.append($0) }
            opening.removeAll(keepingCapacity: true)
            _ = try export.exportTree(at: [root, id], options: .init(rendersArrays: false)) { bytes in
                try file.append(UnsafeRawBufferPointer(bytes))
            }
        }
        try "}".utf8.withContiguousStorageIfAvailable { try file.append(UnsafeRawBufferPointer($0)) }
        try file.flush()
        var deleted: [TreeTable: Int] = [:]
        for id in nodes.keys {
            deleted.merge(try deleteRows([root, id.string]), uniquingKeysWith: +)
        }
        var options = ImportOptions(mode: .merge, maximumRejects: .max, at: [root], allowsEmptying: true)
        options.namedChildren = .deletedByCaller
        options.knownPostShapes = nodes
        let counts = loader.counts
        let importer = TreeImporter(
            source: TemporaryFile.Reader(file), loader: loader, options: options,
            onFinding: { finding in
                preconditionFailure("a reshaped node read again finds /\(finding.path.joined(separator: "/"))")
            }, onReject: onReject)
        try importer.load()
        var stored: [TreeTable: Int] = [:]
        for table in TreeTable.allCases {
            let rows = loader.counts[table.rawValue].rows - counts[table.rawValue].rows
            if rows > 0 { stored[table] = rows }
        }
        return (deleted, stored)
    }
}
