import FirebaseTree
import Foundation
internal import PostgresClient

/// Imports of a node, and merges (of the whole tree too): the rows at the path, or of the children the file
/// names, replaced in one transaction that locks the tree's tables against other writers; readers go on.
extension TreeImport {
    /// An import `--at` a path, a merge, or a write verb's: see `importTree`.
    func importNode(from source: some ByteSource, options: ImportOptions, observer: ImportObserver) throws
        -> ImportReport
    {
        let finishing = FinishingClock()
        let timedStep = finishing.timing(observer.onStep)
        let report = try inImportTransaction(rollback: options.isDryRun) {
            let start = try beginNode(options)
            // What the store keeps of who holds which post and chat follows what the import does to them.
            var touched = TouchedKeys()
            if !options.at.isEmpty { touched.note(options.at) }
            let kept = try KeptCopies(copies: copies, touching: touched)
            var replaced = 0
            var deletedRoots: Set<String> = []
            if !options.at.isEmpty, options.mode == .replace {
                replaced = try treeRows.deleteRows(under: options.at).values.reduce(0, +)
            }
            if options.mode == .merge, case .deletedFirst(let children) = options.namedChildren {
                replaced = try treeRows.deleteRows(underAll: children.map { options.at + [$0] }).values.reduce(0, +)
                if options.at.isEmpty { deletedRoots.formUnion(children) }
            }
            // A merge names each node it replaces, `null` ones included.
            let load = TreeLoad(
                source, options: options, on: target,
                findings: .deleteRows(
                    indexes: nil, clock: finishing, onStep: timedStep,
                    onDeleting: { path in
                        if options.at.isEmpty, let root = path.first { deletedRoots.insert(root) }
                    }),
                onReject: observer.onReject
            ).observed(by: observer)
            var reading: TreeImporter?
            var report: ImportReport
            do {
                let stagedLikes: Bool
                (report, stagedLikes) = try read(
                    load, likes: nil, indexes: nil, observer: observer, onStep: timedStep, reading: &reading)
                try kept.touchingRoots(deletedRoots).settle(
                    stagedLikes: stagedLikes, isDistributed: nil, onStep: timedStep)
                finishing.end()
            } catch {
                throw Self.failed(error, reading: reading, options: options)
            }
            report.sessions = 1
            if let warning = start.fewerSessions { report.add(warning) }
            if options.mode == .merge, options.at.isEmpty, let warning = try misplacedMergeWarning(deletedRoots) {
                report.add(warning)
            }
            if !options.at.isEmpty, report.rowsImported > 0 {
                // Something was written below the leaves at the path's ancestors (and, for a merge, at the path):
                // Firebase replaced them; left here, they would come back once what hides them is removed.
                let leaves = options.mode == .merge ? options.at : Array(options.at.dropLast())
                replaced += try treeRows.deleteLeaves(atAndAbove: leaves)
            }
            // Written inside a child of /posts (or some of its children merged): its shape is its children's,
            // which this import saw only some of.
            if options.at.count >= (options.mode == .merge ? 2 : 3), options.at[0] == TreeTable.feedPosts.rootKey {
                try restoreMisshapenPosts(among: [options.at[1]])
            }
            report.rowsReplaced += replaced
            report.finishing = finishing.steps
            if options.mode == .replace, !options.allowsEmptying, report.rowsImported == 0, replaced > 0 {
                throw Self.emptyingRefused(at: options.at, everyValueRejected: report.rejectCount > 0)
            }
            return report
        }
        finishing.end()
        return report
    }

    /// A merge's or a node's start: the tree's tables locked against writes.
    private func beginNode(_ options: ImportOptions) throws -> Start {
        try treeRows.lockTree()
        var start = Start()
        start.fewerSessions = Self.oneSessionWarning(
            asked: options.jobs, because: "only a replace of the whole store loads on several sessions")
        return start
    }

    /// A warning when a merge of the whole tree wrote top-level nodes that look like an export of one node: none
    /// of the file's keys is one of the app's nodes, and each (of the first five) is already a child of one of
    /// them, as after `export users.json --path /users` then `import users.json --mode merge` without `--at`.
    private func misplacedMergeWarning(_ keys: Set<String>) throws -> ImportWarning? {
        let roots = Set(TreeTable.allCases.compactMap(\.rootKey))
        guard !keys.isEmpty, keys.isDisjoint(with: roots) else { return nil }
        let sample = keys.sorted(by: FirebaseKey.precedes).prefix(5)
        for root in roots.sorted() {
            let isChild = try sample.allSatisfy { key in
                try export.childKeys(of: [root], startingWith: key, limit: 1).contains { FirebaseKey.same($0, key) }
            }
            guard isChild else { continue }
            let named = sample.joined(separator: ", ") + (keys.count > sample.count ? ", …" : "")
            return ImportWarning(
                path: "/",
                message: "the file's top-level keys (\(named)) are children of /\(root) too: if it is an export of "
                    + "/\(root), this merge wrote them at the top level; merge it with --at /\(root)")
        }
        return nil
    }

    /// An import at a path inside a stored record (`--at /posts/UID/KEY/poster`): the record is read, changed in
    /// memory as `write` changes it, and stored again, so it stays one row. Nil when no record holds the path.
    /// The file is read whole, as a write's JSON is; one larger than `recordFileLimit` is refused.
    func importIntoRecord(
        from source: some ByteSource, options: ImportOptions, onReject: @escaping (ImportReject) throws -> Void
    ) throws -> ImportReport? {
        try StorageError.converting {
            try connection.withTransaction(rollback: options.isDryRun) {
                try treeRows.lockTree()
                // A merge at a record's own path changes some of its fields: a rewrite too.
                guard let record = try treeRows.recordPath(holding: options.at, orIs: options.mode == .merge) else {
                    return nil
                }
                var source = source
                var bytes: [UInt8] = []
                var buffer = [UInt8](repeating: 0, count: 1 << 16)
                while case let count = try buffer.withUnsafeMutableBytes({ try source.read(into: $0) }), count > 0 {
                    bytes += buffer[..<count]
                    guard bytes.count <= Self.recordFileLimit else {
                        let error = StorageError(
                            .invalidValue,
                            "cannot import at /\(options.at.joined(separator: "/")): it lies inside the record /"
                                + record.joined(separator: "/") + ", and the file is larger than a record can be",
                            hint: "Import the whole record at /\(record.joined(separator: "/")).")
                        throw error.remedied(.importWholeRecord(path: record))
                    }
                }
                let json = String(decoding: bytes, as: UTF8.self)
                let below = Array(options.at[record.count...])
                if options.mode == .replace, !options.allowsEmptying, try TreeValue.parse(json: json) == nil,
                    try exportedValue(at: options.at) != nil
                {
                    throw Self.emptyingRefused(at: options.at, everyValueRejected: false)
                }
                var recordOptions = options
                recordOptions.at = record
                recordOptions.mode = .replace
                recordOptions.allowsEmptying = true
                recordOptions.isDryRun = false  // the transaction around it rolls back
                let rewritten = try rewrittenRecord(record, changing: below, with: json, mode: options.mode)
                var report = try importTree(
                    from: MemorySource(rewritten), options: recordOptions,
                    observer: ImportObserver(onReject: onReject))
                report.isDryRun = options.isDryRun
                report.mode = options.mode
                return report
            }
        }
    }
}
