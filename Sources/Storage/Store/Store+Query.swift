import Foundation

extension Store {
    /// Streams the children of the node at `path` that `query` selects, as one JSON object in RTDB key order (as
    /// `firebase database:get` with query options prints them), from one snapshot. Children are read in key
    /// order one at a time: without a limit each selected child is written as soon as it is complete; with a
    /// limit at most that many are held, and a first-N in key order stops reading once it has them. A leaf node
    /// is printed as it is, a missing one or no selected child as `null`.
    public func exportTree(
        at path: [String], query: TreeQuery, options: JSONTextWriter.Options = .init(),
        to write: (UnsafeBufferPointer<UInt8>) throws -> Void
    ) throws -> ExportReport {
        let clock = ContinuousClock()
        let started = clock.now
        var report = ExportReport()
        try connection.withTransaction(isolation: .repeatableRead, readOnly: true) {
            var emitter = TreeEmitter(options: options)
            // The last N by key: read from the end and stop after N, when the node lies above every record (a
            // node inside one is read whole anyway, and its rows would come child before parent).
            let reversed = try query.order == .key && query.limitToLast != nil && !path.isEmpty
                && recordPath(holding: path, orIs: true) == nil
            var selection = QuerySelection(query: query, readsBackwards: reversed)
            var child: (key: String, value: TreeValue)?
            var node: TreeValue?
            var bytes = 0
            defer { report.bytes = bytes }
            func offerChild() throws {
                guard let complete = child else { return }
                child = nil
                for (key, value) in selection.offer(key: complete.key, value: complete.value) {
                    try emitter.add([key], value)
                }
                if emitter.bufferedByteCount >= 1 << 18 { try emitter.drain { bytes += $0.count; try write($0) } }
            }
            var merge = try openRows(at: path, reversed: reversed, report: &report)
            defer { merge.close() }
            /// Takes in one row; false once a first-N by key has its N.
            func take(_ rowPath: [String], _ stream: PartStream) throws -> Bool {
                let part = try stream.table.part(from: stream.currentRow).value
                guard rowPath.count > path.count else {
                    // The node lies inside this row's record (or is it): small, so it is read whole, with the
                    // unmapped values below it that follow.
                    if let value = part?.descendant(at: path[rowPath.count...]) { node = node?.merging(value) ?? value }
                    return true
                }
                if node != nil {
                    if let part { node!.set(part, at: rowPath[path.count...]) }
                    return true
                }
                let key = rowPath[path.count]
                if child?.key != key {
                    try offerChild()
                    if selection.isComplete { return false }
                }
                guard let part else { return true }
                var value = child?.value ?? .object([:])
                if rowPath.count == path.count + 1 {
                    value = child == nil ? part : value.merging(part)
                } else {
                    value.set(part, at: rowPath[(path.count + 1)...])
                }
                child = (key, value)
                return true
            }
            while let stream = merge.next() {
                report.rows += 1
                guard try take(stream.currentPath!, stream) else { break }
                try merge.advance()
            }
            try offerChild()
            if let node {
                guard let children = node.children else {
                    try emitter.add([], node)
                    try emitter.finish()
                    try emitter.drain { bytes += $0.count; try write($0) }
                    return
                }
                for (key, value) in children.sorted(by: { PartMerge.precedes([$0.key], [$1.key]) }) {
                    for (key, value) in selection.offer(key: key, value: value) { try emitter.add([key], value) }
                }
            }
            for (key, value) in selection.heldInKeyOrder { try emitter.add([key], value) }
            try emitter.finish()
            try emitter.drain { bytes += $0.count; try write($0) }
        }
        report.seconds = (clock.now - started).seconds
        return report
    }
}
