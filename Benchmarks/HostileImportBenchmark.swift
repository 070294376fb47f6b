import Foundation
import Storage

/// `hostile-import`: the inputs whose memory used to grow with their size, each imported by `admin import` into
/// a private embedded server, with admin's wall time and peak RSS (the ceiling is 128 MB for any input) beside
/// Python's `json.load` of the same file (the whole tree in memory, as a hand-written migration script holds it):
///
/// - one user of `recordMegabytes` MB in many small fields (typed fields and extras held, the rest spilled);
/// - one user whose extras are seven leaves of a seventh of that each (base64 photos);
/// - one post holding a nested object of that size, of 1.8 M small objects for 60 MB;
/// - `rejects` values of 1 MB each under keys Firebase forbids, imported with `--max-rejects`;
/// - 40,000 repeats of one key (the last one wins, as in Firebase).
struct HostileImportBenchmark {
    let recordMegabytes: Int
    let rejects: Int
    let work: String

    struct Case {
        var name: String
        var arguments: [String]
        var write: ((String) -> Void) -> Void
    }

    func cases() -> [Case] {
        let bytes = recordMegabytes * 1_000_000
        let field = String(repeating: "x", count: 90)
        let leaf = String(repeating: "iVBORw0KGgoAAAANSUhEUgAA", count: bytes / 7 / 24)
        let megabyte = String(repeating: "R0lGODlhAQABAIAAAP", count: 1_000_000 / 18)
        return [
            Case(name: "one user, \(recordMegabytes) MB of 100-byte fields", arguments: []) { out in
                out(#"{"users":{"u":{"username":"u""#)
                for i in 0..<(bytes / 100) { out(#","f\#(i)":"\#(field)""#) }
                out("}}}")
            },
            Case(name: "one user, seven \(recordMegabytes / 7) MB leaves", arguments: []) { out in
                out(#"{"users":{"u":{"username":"u""#)
                for i in 0..<7 { out(#","photo\#(i)":"\#(leaf)""#) }
                out("}}}")
            },
            Case(name: "one post, a nested object of \(recordMegabytes) MB", arguments: []) { out in
                out(#"{"posts":{"u":{"-P":{"image_url":"x","tags":{"#)
                for i in 0..<(bytes / 33) { out((i == 0 ? "" : ",") + #""t\#(i)":{"n":\#(i),"w":0.5}"#) }
                out("}}}}}")
            },
            Case(name: "\(rejects) rejected values of 1 MB", arguments: ["--max-rejects", String(rejects)]) { out in
                out(#"{"bad":{"#)
                for i in 0..<rejects { out((i == 0 ? "" : ",") + #""k.\#(i)":"\#(megabyte)""#) }
                out(#"},"ok":1}"#)
            },
            Case(name: "40,000 repeats of one key", arguments: []) { out in
                out(#"{"users":{"#)
                for i in 0..<40_000 { out((i == 0 ? "" : ",") + #""u":{"username":"n\#(i)"}"#) }
                out("}}")
            },
        ]
    }

    /// Writes case `index` to `path` (in the child process `hostile-write` runs).
    func write(case index: Int, to path: String) {
        writeFile(path, cases()[index].write)
    }

    func run() throws {
        let (cluster, conninfo, admin) = try openFreshServer(work: work)
        defer { cluster.close() }
        print(
            "| input | file MB | admin import s | admin peak RSS MB | json.load s | json.load peak RSS MB | RSS ratio |"
        )
        print("|---|---|---|---|---|---|---|")
        for (index, input) in cases().enumerated() {
            let file = "\(work)/case\(index).json"
            // Written by a child process: a child's peak RSS starts at its parent's (Linux keeps the high-water
            // mark across exec), so this process must never hold the cases' large strings itself.
            _ = try runChild(["hostile-write", String(index), file, String(recordMegabytes), String(rejects)])
            defer { try? FileManager.default.removeItem(atPath: file) }
            let imported = try spawn(
                admin,
                [
                    "--db", conninfo, "-q", "import", file, "--yes", "--force",
                    "--rejects", "\(work)/rejects.jsonl",
                ] + input.arguments,
                stdout: "/dev/null", stderr: "/dev/null")
            let python = try? spawn(
                "/usr/bin/python3", ["-c", "import json, sys; json.load(open(sys.argv[1], 'rb'))", file])
            let megabytes = Double(fileSize(file)) / 1_000_000
            print(
                "| \(input.name) | \(format(megabytes)) | \(String(format: "%.2f", imported.seconds)) "
                    + "| \(format(imported.peakMB)) | \(python.map { String(format: "%.2f", $0.seconds) } ?? "failed") "
                    + "| \(python.map { format($0.peakMB) } ?? "") "
                    + "| \(python.map { String(format: "%.1f×", $0.peakMB / imported.peakMB) } ?? "") |")
        }
    }
}
