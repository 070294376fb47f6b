import Foundation
import Storage

/// The rejects file: one JSON object per line, `{"path", "reason", "value"}`, or for a value over 1 MB
/// `{"path", "reason", "truncated": true, "value_bytes", "value_prefix"}` with its first megabyte as a string.
/// Created on the first reject, as exports are (mode 0600, exclusively, never through a link) since rejects are
/// user data too; an existing file is only replaced with `--force`. The default file is kept only by an import
/// that commits; for a dry run or a failed import the first rejects are named in the summary instead.
final class RejectsFile {
    let path: String
    private let replacing: Bool
    private let keepsOnlyIfCommitted: Bool
    private var file: OutputFile?
    private(set) var count = 0
    /// The first rejects, for a summary when the file is not kept.
    private var first: [ImportReject] = []
    private var isKept = false
    /// What the file's rejects came from ("import", "sync"), for messages.
    private let command: String

    /// Refuses an existing file at `path` unless `replacing`, before anything is imported; `command` is what
    /// writes it.
    init(path: String, replacing: Bool, keepsOnlyIfCommitted: Bool = false, command: String = "import") throws {
        self.path = path
        self.command = command
        self.replacing = replacing
        self.keepsOnlyIfCommitted = keepsOnlyIfCommitted
        var info = stat()
        if !replacing, lstat(path, &info) == 0 {
            throw ConsoleError(
                .commandFailed,
                "the rejects file \(path) exists (from an earlier \(command)?): --force replaces it, --rejects FILE writes "
                    + "another"
            )
        }
    }

    func write(_ reject: ImportReject) throws {
        if first.count < 5 { first.append(reject.cut(to: 200)) }
        let file = try self.file ?? OutputFile(path: path, replacing: replacing, createsDirectory: false)
        self.file = file
        var fields = [("path", JSONWriter.string(reject.path)), ("reason", JSONWriter.string(reject.reason))]
        if reject.isTruncated {
            fields += [
                ("truncated", "true"), ("value_bytes", String(reject.valueBytes)),
                ("value_prefix", JSONWriter.string(reject.value)),
            ]
        } else {
            fields.append(("value", reject.value))
        }
        var line = JSONWriter.object(fields) + "\n"
        try line.withUTF8 { try file.write($0) }
        count += 1
    }

    /// Puts the file in place (or, when it is kept only for a committed import and this one did not commit,
    /// discards it). With `--force` and no reject, an earlier file goes: it described another import.
    func finish(committed: Bool) throws {
        if let file {
            self.file = nil
            if committed || !keepsOnlyIfCommitted {
                try file.commit()
                isKept = true
            } else {
                file.discard()
            }
        } else if replacing, committed || !keepsOnlyIfCommitted {
            unlink(path)
        }
    }

    /// What became of the rejects: the file they were written to, or the first of them; nil without any.
    var summary: String? {
        guard count > 0 else { return nil }
        let rejected = DomainViews.count(count, "rejected value")
        if isKept { return "\(rejected) written to \(path)" }
        let listed = first.map { "  \($0.path): \($0.reason): \($0.value)\($0.isTruncated ? "…" : "")" }
        let more = count > first.count ? ["  … and \(count - first.count) more; --rejects FILE writes them all"] : []
        return
            (["\(rejected), not kept (nothing was \(command == "import" ? "imported" : "written")):"] + listed + more)
            .joined(separator: "\n")
    }
}
