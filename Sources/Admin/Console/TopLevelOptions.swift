import ArgumentParser
import FirebaseTree
import Foundation

/// `--only` and `--exclude`: the top-level nodes import, verify and sync read, as pg_restore's `-t` selects tables.
struct TopLevelOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "Only these top-level nodes (comma-separated, or repeated); the others are left out on both sides.",
            valueName: "node,…"))
    var only: [String] = []

    @Option(help: ArgumentHelp("Leave out these top-level nodes (comma-separated, or repeated).", valueName: "node,…"))
    var exclude: [String] = []

    /// The selection the options make; nil for every node.
    var selection: TopLevelSelection? {
        func names(_ values: [String]) -> Set<String> {
            Set(values.flatMap { $0.split(separator: ",").map { String($0.trimmingCharacters(in: .whitespaces)) } })
        }
        return TopLevelSelection(only: only.isEmpty ? nil : names(only), excluded: names(exclude))
    }

    /// Refuses a selection beside `--path` (or `option`): it picks among the root's children.
    func validate(path: String, option: String = "--path") throws {
        guard selection != nil, !(try FirebasePath.keys(of: path)).isEmpty else { return }
        throw ValidationError("--only and --exclude pick top-level nodes of the whole tree: not with \(option)")
    }
}
