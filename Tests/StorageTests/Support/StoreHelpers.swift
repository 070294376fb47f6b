import Foundation
import PostgresTestSupport
import Testing
import TreeTestSupport

@testable import Storage

/// Imports `json` into a fresh store.
@discardableResult
func importJSON(_ json: String, into store: Store, options: ImportOptions = ImportOptions(), chunkSize: Int = .max)
    throws -> ImportReport
{
    try store.importTree(from: MemorySource(json, chunkSize: chunkSize), options: options)
}

/// `importJSON` over `jobs` sessions, each reading `json` again from memory (a parallel whole-tree import).
@discardableResult
func importJSON(_ json: String, into store: Store, options: ImportOptions, jobs: Int) throws -> ImportReport {
    let bytes = Array(json.utf8)
    var options = options
    options.jobs = jobs
    return try store.importTree(
        from: MemorySource(bytes, chunkSize: 4_099), options: options,
        reopening: { MemorySource(bytes, chunkSize: 5_003) })
}

/// The store's export (of the node at `path`) as text.
func exportJSON(_ store: Store, at path: [String] = [], options: JSONTextWriter.Options = .init()) throws -> String {
    var bytes: [UInt8] = []
    _ = try store.exportTree(at: path, options: ExportOptions(format: options)) { bytes.append(contentsOf: $0) }
    return String(decoding: bytes, as: UTF8.self)
}

/// The export of a fresh store that imported `json` alone.
func exported(_ json: String) throws -> String {
    let store = try makeStore()
    try importJSON(json, into: store)
    return try exportJSON(store)
}

func expectSameText(_ got: String, _ expected: String, sourceLocation: SourceLocation = #_sourceLocation) {
    // As bytes: `==` on strings is canonical equivalence, and "é" and "e\u{301}" are two Firebase keys.
    #expect(
        got.utf8.elementsEqual(expected.utf8), Comment(rawValue: firstDifference(got, expected)),
        sourceLocation: sourceLocation)
}

func makeStore() throws -> Store {
    Store(connection: try TestPostgres.makeDatabase().connect())
}

let fixtureDirectory = Repository.url("Tests/StorageTests/Fixtures")

/// A store holding `tree` (by default `consistentTree`).
func consistentStore(_ tree: TreeValue = consistentTree) throws -> Store {
    let store = try makeStore()
    try importJSON(tree.json, into: store)
    return store
}

/// The export of `store` equals the tree the app would have written.
func expectTree(_ store: Store, _ expected: TreeValue, sourceLocation: SourceLocation = #_sourceLocation) throws {
    let reference = try makeStore()
    try importJSON(expected.json, into: reference)
    expectSameText(try exportJSON(store), try exportJSON(reference), sourceLocation: sourceLocation)
}

/// Every check passes on `store`.
func expectCheckClean(_ store: Store, sourceLocation: SourceLocation = #_sourceLocation) throws {
    for result in try store.check(examples: 3) {
        #expect(
            result.isClean, "\(result.check.rawValue): \(result.violations) \(result.examples)",
            sourceLocation: sourceLocation)
    }
}
