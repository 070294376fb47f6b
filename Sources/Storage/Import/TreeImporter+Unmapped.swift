import FirebaseTree
import Foundation
internal import PostgresClient

/// What the importer keeps as unmapped values: nodes no table maps, and priorities held until their object has a row.
extension TreeImporter {
    /// The current value, streamed leaf by leaf into `unmapped_values`.
    func unmapped() throws {
        if isContainerToken {
            return try streamChildren { _ in try self.unmapped() }
        }
        guard let value = try leafValue() else { return }
        try emitUnmappedLeaf(path.keys(), value)
    }

    func emitUnmapped(_ tree: TreeValue) throws {
        for (leafPath, value) in tree.leaves(prefix: path.keys()) {
            try emitUnmappedLeaf(leafPath, value)
        }
    }

    func emitUnmappedLeaf(_ leafPath: [String], _ value: TreeValue) throws {
        try beforeEmit()
        try loader.appendRow(.unmappedValues) { row in
            try row.append(leafPath[0])
            try row.append(Array(leafPath.dropFirst()))
            switch value {
            case .string(let text):
                try row.append(text)
                row.append(nil as Double?)
                row.append(nil as Bool?)
            case .number(let number):
                try row.append(nil as String?)
                row.append(number)
                row.append(nil as Bool?)
            case .bool(let flag):
                try row.append(nil as String?)
                row.append(nil as Double?)
                row.append(flag)
            case .object:
                preconditionFailure("leaves only")
            }
            orderBytes.removeAll(keepingCapacity: true)
            FirebaseKey.appendOrder(ofPath: leafPath, to: &orderBytes)
            try orderBytes.withUnsafeBufferPointer { try row.append(utf8: $0) }
        }
    }

    /// Writes the priorities of the objects a row is about to land in, outermost first.
    func beforeEmit() throws {
        emittedRows += 1
        guard !pendingPriorities.isEmpty else { return }
        let pending = pendingPriorities
        pendingPriorities.removeAll()
        priorityRowsEmitted += pending.count
        for (priorityPath, value) in pending { try emitUnmappedLeaf(priorityPath, value) }
    }
}
