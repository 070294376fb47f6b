import FirebaseTree
import Foundation
import Storage

/// Where a Firebase export and the store differ, as verify and sync list it: one row per difference.
enum DifferenceViews {
    /// How much of a value a table shows.
    private static let shownValueLength = 60

    /// The differences as a table of path, kind, source and store; values cut for a terminal, whole in CSV.
    static func table(_ differences: [TreeDifference], format: OutputFormat) -> ResultTable {
        let cut = format == .csv ? Int.max : shownValueLength
        return ResultTable(
            columns: ["path", "kind", "source", "store"],
            rows: differences.map { difference in
                [
                    .text(FirebasePath.string(of: difference.path)), .text(difference.kind.rawValue),
                    cell(difference.source, cut: cut, reason: difference.reason),
                    cell(difference.store, cut: cut),
                ]
            })
    }

    /// The differences as JSON objects of `path`, `kind`, `source`, `store` (values whole, as JSON) and a
    /// reject's `reason`.
    static func json(_ differences: [TreeDifference]) -> [String] {
        differences.map { difference in
            JSONWriter.object(
                [
                    ("path", JSONWriter.string(FirebasePath.string(of: difference.path))),
                    ("kind", JSONWriter.string(difference.kind.rawValue)),
                    ("source", value(difference.source, isCut: difference.isCut)),
                    ("store", value(difference.store, isCut: difference.isCut)),
                ] + (difference.reason.map { [("reason", JSONWriter.string($0))] } ?? []))
        }
    }

    private static func cell(_ json: String?, cut: Int, reason: String? = nil) -> Cell {
        guard var json else { return .null }
        if json.count > cut { json = json.prefix(cut - 1) + "…" }
        return .text(reason.map { "\(json) (\($0))" } ?? json)
    }

    /// A value as JSON; one cut at its length limit is no longer JSON, so it becomes a string of its text.
    private static func value(_ json: String?, isCut: Bool) -> String {
        guard let json else { return "null" }
        return isCut ? JSONWriter.string(json) : json
    }
}
