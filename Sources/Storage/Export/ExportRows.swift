import FirebaseTree
import Foundation
internal import PostgresClient

extension TreeExport {
    /// Adds the row `stream` is on to an export of the node at `path`: straight from the row's text when it is a
    /// typed row that nothing later falls inside (`mayGrow` false), else as a tree part.
    static func add(
        _ stream: PartStream, below path: [String], shallow: Bool, mayGrow: Bool, to emitter: TreeEmitter
    ) throws {
        let row = stream.row
        if !shallow, !mayGrow, stream.parentPath.count >= path.count, !stream.parentPath.isEmpty {
            let parent = path.isEmpty ? stream.parentPath : Array(stream.parentPath[path.count...])
            if stream.table != .unmappedValues {
                if try emitter.addDirectly(row, of: stream.table, under: parent) { return }
            } else if !stream.nextRowMayLieBelow {
                let written = try UnmappedPath.withLastKey(of: row) { key in
                    try emitter.addDirectly(key: key, under: parent) { TreeTable.writeUnmappedValue(of: row, to: &$0) }
                }
                if written == true { return }
            }
        }
        let rowPath = stream.currentPath
        if shallow {
            for (key, value) in try shallowParts(of: stream, at: rowPath, below: path) {
                try emitter.add(key.map { [$0] } ?? [], value)
            }
        } else if rowPath.count < path.count {
            // A record holding the node asked for: only that part of it.
            if let value = try stream.table.part(from: row).value?.descendant(at: path[rowPath.count...]) {
                try emitter.add([], value)
            }
        } else if let value = try stream.table.part(from: row).value {
            try emitter.add(Array(rowPath[path.count...]), value)
        }
    }
}

extension TreeExport {
    /// `Store.estimatedRowCount`: see there.
    func estimatedRowCount() throws -> Int {
        let names = TreeTable.names
        return try connection.query(
            """
            SELECT coalesce(sum(greatest(reltuples, 0)), 0)::bigint FROM pg_class
            WHERE relname = ANY(\(names)) AND relnamespace = current_schema()::regnamespace
            """)[0].decode(Int.self, at: 0)
    }

    /// The rows holding part of the node at `path`, in export order (`reversed`: from the last), limited to the
    /// children `children` admits, merged from the tables' reads in the caller's read-only transaction. Close the
    /// merge when done with it. `ordered`: `tablesWithOrderedRows()`. `firstPage`: the reads go by pages of that
    /// many rows and then more (`PartStream`), for a caller that will likely stop early.
    func openRows(
        at path: [String], reversed: Bool = false, children: ChildKeyRange = .all,
        excluding excluded: Set<TreeTable> = [],
        ordered: Set<TreeTable>, firstPage: Int? = nil
    ) throws -> PartMerge {
        let shared = PartStream.Shared()
        var streams: [PartStream] = []
        for table in TreeTable.allCases where !excluded.contains(table) {
            for read in table.reads(
                at: path, reversed: reversed, children: children, hasOrderedRows: ordered.contains(table))
            {
                streams.append(PartStream(read, connection: connection, shared: shared, firstPage: firstPage))
            }
        }
        do {
            return try PartMerge(streams: streams, reversed: reversed, shared: shared, connection: connection)
        } catch {
            if shared.inFlight != nil { connection.drainResults() }
            throw error
        }
    }

    /// What a row adds to a shallow read of the node at `path`, in export order: the children it holds (a key and
    /// `true`, or the child's value when that is a leaf, without its priority), or the node's own value (nil key)
    /// when the node is a leaf.
    private static func shallowParts(of stream: PartStream, at rowPath: [String], below path: [String])
        throws -> [(key: String?, value: TreeValue)]
    {
        guard rowPath.count <= path.count else {
            // The row is a child or lies below one; only unmapped leaves can make that child a leaf.
            let child = rowPath[path.count]
            // Shallow reads leave priorities out, the node's own included.
            guard !child.hasPrefix(".") else { return [] }
            guard stream.table == .unmappedValues, rowPath.count <= path.count + 2,
                let leaf = try stream.table.part(from: stream.row).value, leaf.children == nil,
                rowPath.count == path.count + 1 || rowPath.last == FirebaseKey.value
            else { return [(child, .bool(true))] }
            return [(child, leaf)]
        }
        guard let node = try stream.table.part(from: stream.row).value?.descendant(at: path[rowPath.count...])
        else { return [] }
        guard let children = node.children else { return [(nil, node)] }
        return children.filter { !$0.key.hasPrefix(".") }
            .sorted { PartMerge.precedes([$0.key.string], [$1.key.string]) }
            .map { key, value in (key.string, value.children == nil ? value : value[FirebaseKey.value] ?? .bool(true)) }
    }
}
