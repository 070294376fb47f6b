import Foundation
import PostgresTestSupport
import Testing

/// The layers depend one way, `CLibPQ ← PostgresClient ← Storage ← Admin`, and the compiler holds each to it
/// once the imports do: with `MemberImportVisibility` a file sees only what the modules it imports declare, and
/// `Store`'s connection is internal, so a console that imports Storage alone cannot send SQL.
@Suite("Module boundaries")
struct ModuleBoundaryTests {
    private static let sources = Repository.url("Sources")

    /// Each Swift file under `Sources/<module>` with the modules it imports.
    private static func imports(in module: String) throws -> [(file: String, modules: [String])] {
        let root = sources.appendingPathComponent(module)
        let enumerator = try #require(FileManager.default.enumerator(atPath: root.path))
        return try enumerator.compactMap { $0 as? String }.filter { $0.hasSuffix(".swift") }.sorted().map { file in
            let text = try String(contentsOf: root.appendingPathComponent(file), encoding: .utf8)
            let modules = text.split(separator: "\n").compactMap { line in
                line.firstMatch(of: /^(?:@[A-Za-z_]+\s+)*import\s+(?:[a-z]+\s+)?([A-Za-z_][A-Za-z0-9_]*)/).map {
                    String($0.1)
                }
            }
            return (module + "/" + file, modules)
        }
    }

    @Test func theConsoleImportsNeitherTheClientNorLibpq() throws {
        let files = try Self.imports(in: "Admin")
        #expect(files.count > 20)
        for (file, modules) in files {
            #expect(!modules.contains("PostgresClient") && !modules.contains("CLibPQ"), "\(file) imports \(modules)")
        }
    }

    @Test func onlyTheClientImportsLibpq() throws {
        for module in ["FirebaseTree", "Storage", "Admin"] {
            for (file, modules) in try Self.imports(in: module) {
                #expect(!modules.contains("CLibPQ"), "\(file) imports libpq; only PostgresClient talks to it")
            }
        }
        #expect(try Self.imports(in: "PostgresClient").contains { $0.modules.contains("CLibPQ") })
    }

    /// Storage imports PostgresClient internally, so the compiler refuses any public declaration that would show
    /// one of its types (a `Connection`, a `SQLState`, a `DatabaseError`): Storage's API is its own.
    @Test func storageShowsNothingOfTheClient() throws {
        let storage = Self.sources.appendingPathComponent("Storage")
        let enumerator = try #require(FileManager.default.enumerator(atPath: storage.path))
        var importing = 0
        for case let file as String in enumerator where file.hasSuffix(".swift") {
            let text = try String(contentsOf: storage.appendingPathComponent(file), encoding: .utf8)
            for line in text.split(separator: "\n") where line.contains(/^(?:\w+\s+)*import\s+PostgresClient\b/) {
                importing += 1
                #expect(line == "internal import PostgresClient", "Storage/\(file): \(line)")
            }
        }
        #expect(importing > 20)
    }

    /// `@testable import` compiles only where testing is enabled: in a library or the test support it breaks
    /// `swift build -c release` of every target (BENCHMARKS.md's first step). Test targets alone may use it.
    @Test func onlyTestTargetsImportForTesting() throws {
        let testSupport = ["PostgresTestSupport", "TreeTestSupport"].map { Repository.url("Tests/" + $0) }
        for directory in try FileManager.default.contentsOfDirectory(atPath: Self.sources.path).map({
            Self.sources.appendingPathComponent($0)
        }) + testSupport {
            let enumerator = try #require(FileManager.default.enumerator(atPath: directory.path))
            for case let file as String in enumerator where file.hasSuffix(".swift") {
                let text = try String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8)
                #expect(
                    !text.split(separator: "\n").contains { $0.hasPrefix("@testable import") },
                    "\(directory.lastPathComponent)/\(file) imports for testing")
            }
        }
    }

    @Test func theTreeKnowsNoDatabase() throws {
        for (file, modules) in try Self.imports(in: "FirebaseTree") {
            #expect(
                Set(modules).isDisjoint(with: ["CLibPQ", "PostgresClient", "Storage"]), "\(file) imports \(modules)")
        }
    }
}
