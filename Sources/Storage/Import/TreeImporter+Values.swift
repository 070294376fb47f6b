import FirebaseTree
import Foundation
internal import PostgresClient

/// Values read into memory (a record's fields, within its budget) and the rejects met reading them.
extension TreeImporter {
    // MARK: Reading values

    /// The current value as an in-memory tree when its JSON takes at most `budget` bytes; nil when it vanishes
    /// (null, empty, only a priority), is rejected, or was larger: then what had been read and all the rest were
    /// written as unmapped values at their paths instead.
    func readTree(budget: Int) throws -> TreeValue? {
        var isSpilled = false
        return try readTree(from: reader.tokenStart, budget: budget, isSpilled: &isSpilled)
    }

    func readTree(from start: Int, budget: Int, isSpilled: inout Bool) throws -> TreeValue? {
        guard isContainerToken else {
            guard let value = try leafValue() else { return nil }
            guard !isSpilled, reader.bytesRead - start <= budget else {
                isSpilled = true
                try emitUnmappedLeaf(path.keys(), value)
                return nil
            }
            return value
        }
        if isSpilled {
            try unmapped()
            return nil
        }
        return try readChildren(from: start, budget: budget, isSpilled: &isSpilled).map { .object($0.object) }
    }

    /// The children of the object or array the current token opens, read as `readTree` reads a value: nil when
    /// it vanishes or went out as unmapped values. A typed object field (`poster`, `members`) keeps them as they
    /// are, which its columns take without a dictionary made.
    func readChildren(from start: Int, budget: Int, isSpilled: inout Bool) throws -> FieldList? {
        var children = FieldList()
        var spilled = false
        try forEachChild(onDuplicate: { children[$0] = nil }) { _ in
            if !spilled, self.reader.bytesRead - start > budget { spilled = true }
            if spilled {
                try self.writeOut(&children, under: self.path.keys().dropLast())
                return try self.unmapped()
            }
            let child = try self.readTree(from: start, budget: budget, isSpilled: &spilled)
            if spilled {
                // Over the budget inside this child, which went out on its own: its siblings read so far follow.
                try self.writeOut(&children, under: self.path.keys().dropLast())
            } else {
                children[self.path.lastKey] = child
            }
        }
        if spilled {
            isSpilled = true
            return nil
        }
        // An object that only has a priority is an empty node, which vanishes.
        if children.isEmpty || (children.count == 1 && children[FirebaseKey.priority] != nil) { return nil }
        return children
    }

    /// Writes held children out as unmapped values under `parent`, and forgets them.
    func writeOut(_ children: inout FieldList, under parent: ArraySlice<String>) throws {
        try children.forEach { key, value in
            for (leafPath, leaf) in value.leaves(prefix: Array(parent) + [key]) {
                try emitUnmappedLeaf(leafPath, leaf)
            }
        }
        children = FieldList()
    }

    /// Reads the current scalar into the typed slot `step` of `children`: a string or a number as its token's
    /// bytes (no String made); what `leafValue` rejects leaves the slot empty.
    func readTypedScalar(at step: Int, into children: inout RecordChildren) throws {
        switch reader.token {
        case .string where FirebaseKey.problem(withString: reader.text) == nil:
            children.setText(reader.text, at: step)
        case .number where reader.number.isFinite:
            children.setNumber(reader.number, text: reader.text, at: step)
        default:
            children.setValue(try leafValue(), at: step)
        }
    }

    /// The current scalar as a leaf, nil when it is rejected.
    func leafValue() throws -> TreeValue? {
        switch reader.token {
        case .string:
            if let problem = FirebaseKey.problem(withString: reader.text) {
                try reject(problem)
                return nil
            }
            return .string(reader.string)
        case .number:
            guard reader.number.isFinite else {
                try reject("a number outside the range of a double")
                return nil
            }
            return .number(reader.number == 0 ? 0 : reader.number)
        case .true: return .bool(true)
        case .false: return .bool(false)
        default: preconditionFailure("a scalar token")
        }
    }

    // MARK: Rejects

    /// Records a reject of the current value (consuming it) and aborts when there are more than allowed.
    func reject(_ reason: String, at rejectPath: [String]? = nil) throws {
        let (value, isTruncated, valueBytes) = try reader.captureValue(maximumBytes: Self.maximumRejectValueBytes)
        let rejected = ImportReject(
            path: Self.describe((rejectPath ?? path.keys())[...]), reason: reason, value: value,
            isTruncated: isTruncated, valueBytes: valueBytes)
        report.rejectCount += 1
        if report.rejects.count < ImportReport.rejectsKept { report.rejects.append(rejected.cut(to: 4096)) }
        try onReject(rejected)
        guard report.rejectCount > options.maximumRejects else { return }
        let shown = FirebaseKey.describe(path: rejectPath ?? path.keys())
        var error = StorageError(
            .malformedInput, "rejected \(shown): \(reason)",
            hint: options.maximumRejects == 0
                ? "Allowing rejected values lets them through (they are listed and handed to the reject handler)."
                : "More than the \(options.maximumRejects) allowed values were rejected.",
            context: "reading \(shown)")
        error.inputPosition = reader.position
        error.remedy = .allowRejects(allowed: options.maximumRejects)
        throw error
    }

    static func describe(_ path: ArraySlice<String>) -> String {
        "/" + path.joined(separator: "/")
    }
}
