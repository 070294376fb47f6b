import Foundation
import PostgresTestSupport
import Testing

/// Storage's folders depend one way: the features (Import, Export, Sync, …) on `Core` (the connection, reads,
/// the maintenance lock, the tree's tables and rows, the kept copies, snapshots) and on each other without a
/// cycle; `Core` on no other folder; the `Store` facade on any, and nothing on it. Read from the sources: a
/// file depends on a folder when it names a type declared there (comments and string literals aside).
@Suite("Storage's folders")
struct StorageFolderTests {
    private static let storage = Repository.url("Sources/Storage")

    /// Each Swift file under Sources/Storage: its folder and its text without comments and string literals.
    private static func files() throws -> [(path: String, folder: String, code: String)] {
        let enumerator = try #require(FileManager.default.enumerator(atPath: storage.path))
        return try enumerator.compactMap { $0 as? String }.filter { $0.hasSuffix(".swift") }.sorted().map { path in
            let text = try String(contentsOf: storage.appendingPathComponent(path), encoding: .utf8)
            let code = text.replacing(/\/\/[^\n]*/, with: "").replacing(/"(?:[^"\\\n]|\\.)*"/, with: "\"\"")
            let folder = path.contains("/") ? String(path.prefix { $0 != "/" }) : "(top)"
            return (path, folder, code)
        }
    }

    /// The folders each folder's files name types of, with the first file and type that does, for messages.
    private static func arrows() throws -> [String: [String: String]] {
        let files = try files()
        var declaredIn: [String: String] = [:]
        for file in files {
            let declarations = file.code.matches(
                of:
                    /(?m)^(?:(?:public|internal|private|fileprivate|package|final|indirect)\s+)*(?:struct|class|enum|protocol|actor|typealias)\s+([A-Z][A-Za-z0-9_]*)/
            )
            for declaration in declarations where declaredIn[String(declaration.1)] == nil {
                declaredIn[String(declaration.1)] = file.folder
            }
        }
        var arrows: [String: [String: String]] = [:]
        for file in files {
            // Simple word boundaries: by Unicode's rules `Store.treeTables` would be one word.
            let names = file.code.matches(of: /\b([A-Z][A-Za-z0-9_]*)\b/.wordBoundaryKind(.simple)).map { String($0.1) }
            for name in Set(names) {
                guard let folder = declaredIn[name], folder != file.folder else { continue }
                if arrows[file.folder, default: [:]][folder] == nil {
                    arrows[file.folder, default: [:]][folder] = "\(file.path) names \(name)"
                }
            }
        }
        return arrows
    }

    @Test func theFoldersDependOneWay() throws {
        let arrows = try Self.arrows()
        #expect(arrows.count > 10, "the sources were read")
        #expect(arrows["Core"] == nil, "Core depends on no feature: \(arrows["Core"] ?? [:])")
        #expect(arrows["(top)"] == nil, "every source is in a folder: \(arrows["(top)"] ?? [:])")
        for (folder, targets) in arrows where folder != "Store" {
            #expect(targets["Store"] == nil, "only the facade names Store: \(targets["Store"] ?? "")")
            #expect(targets["(top)"] == nil, "\(folder): \(targets["(top)"] ?? "")")
        }
        // No cycle: every folder reaches only folders that do not reach it back.
        func reach(from start: String) -> Set<String> {
            var seen: Set<String> = []
            var stack = [start]
            while let folder = stack.popLast() {
                for target in arrows[folder, default: [:]].keys where seen.insert(target).inserted {
                    stack.append(target)
                }
            }
            return seen
        }
        for folder in arrows.keys.sorted() {
            let cycle = reach(from: folder).contains(folder)
            #expect(!cycle, "\(folder) depends on itself through: \(arrows[folder] ?? [:])")
        }
    }
}
