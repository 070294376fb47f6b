import Dispatch
import FirebaseTree
import Foundation
import Synchronization
import Testing

@testable import Storage

/// A file that gives its first half, then waits (`reached` is signalled) until `open` is signalled.
final class GatedSource: ByteSource, @unchecked Sendable {
    private let bytes: [UInt8]
    private var offset = 0
    let reached = DispatchSemaphore(value: 0)
    let open = DispatchSemaphore(value: 0)

    init(_ text: String) { bytes = Array(text.utf8) }

    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        if offset == bytes.count / 2 {
            reached.signal()
            open.wait()
        }
        let end = offset < bytes.count / 2 ? bytes.count / 2 : bytes.count
        let count = min(buffer.count, end - offset)
        guard count > 0 else { return 0 }
        bytes.withUnsafeBytes { buffer.baseAddress!.copyMemory(from: $0.baseAddress! + offset, byteCount: count) }
        offset += count
        return count
    }
}

/// Runs a whole-tree import of `json` into `store` on a thread of its own, gated at half its file; `whileGated`
/// runs while the import waits there, `whileFinishing` once it was let go. Returns the import's report.
func importGated(
    _ json: String, into store: Store, options: ImportOptions = ImportOptions(),
    onStep: @escaping @Sendable (ImportStep) -> Void = { _ in },
    whileGated: () throws -> Void, whileFinishing: () throws -> Void = {}
) throws -> ImportReport {
    let gate = GatedSource(json)
    nonisolated(unsafe) let store = store
    let outcome = Mutex<Result<ImportReport, any Error>?>(nil)
    let finished = DispatchSemaphore(value: 0)
    Thread {
        let report = Result {
            try store.importTree(from: gate, options: options, observer: ImportObserver(onStep: onStep))
        }
        outcome.withLock { $0 = report }
        finished.signal()
    }.start()
    try #require(gate.reached.wait(timeout: .now() + 60) == .success, "the import never read half its file")
    do {
        try whileGated()
    } catch {
        gate.open.signal()
        _ = finished.wait(timeout: .now() + 60)
        throw error
    }
    gate.open.signal()
    try whileFinishing()
    try #require(finished.wait(timeout: .now() + 120) == .success, "the import never finished")
    return try #require(outcome.withLock { $0 }).get()
}

/// A whole-tree import of `json` that meets a malformed byte at 90 % of the file, then a dry run of it: each
/// leaves `store` as it was (`before`, its export) and nothing beside it (`leftovers`, what the import's tables
/// beside the store left, asked after each).
func expectFailedAndDryRunImportsLeaveNothing(
    of json: String, into store: Store, before: String, leftovers: () throws -> [String],
    sourceLocation: SourceLocation = #_sourceLocation
) throws {
    // The rows before the malformed byte were in the tables beside the store.
    let cut = json.utf8.index(json.utf8.startIndex, offsetBy: json.utf8.count * 9 / 10)
    #expect(throws: StorageError.self, sourceLocation: sourceLocation) {
        try importJSON(String(json[..<cut]) + "\u{1}", into: store)
    }
    expectSameText(try exportJSON(store), before, sourceLocation: sourceLocation)
    #expect(try leftovers() == [], sourceLocation: sourceLocation)

    let report = try importJSON(json, into: store, options: ImportOptions(isDryRun: true))
    #expect(report.isDryRun && report.rowsImported > 0, sourceLocation: sourceLocation)
    #expect(
        !report.finishing.contains {
            [ImportReport.Finishing.switch, ImportReport.Finishing.commit].contains($0.target)
        },
        "a dry run never switches, nor commits", sourceLocation: sourceLocation)
    expectSameText(try exportJSON(store), before, sourceLocation: sourceLocation)
    #expect(try leftovers() == [], sourceLocation: sourceLocation)
}
