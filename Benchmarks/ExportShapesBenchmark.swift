import Foundation
import Storage

/// `export-shapes`: export and `get` of the shapes real exports have and generated ones do not, each against the
/// same tree with letter-prefixed keys where there is one, on one embedded server:
///
/// - `logs`: readings keyed by epoch milliseconds (`{"1497918951912": {"t": 20.5, "h": 40}}`), beside `k1497…`;
/// - `array`: a JSON array of small records, beside an object keyed `k0`, `k1`, …;
/// - `users`: users keyed by numeric uids (100000000 + 7i, not an array), beside `u100000000`, …;
/// - `leaves`: 300 KB strings (base64 photos) under one node, `--large-mb` of them;
/// - `gallery`: a JSON array of 50 KB strings, a fifth of `--large-mb`.
///
/// For each: `admin export` to /dev/null and `admin get /NODE` to /dev/null (median wall seconds, MB/s of the
/// JSON, each process's peak RSS), and `admin get /NODE --order-by-key --limit-to-last 2` (milliseconds, the
/// whole process).
struct ExportShapesBenchmark {
    let children: Int
    let largeMegabytes: Int
    let runs: Int
    let work: String

    struct Shape {
        var name: String
        var node: String
        /// Writes the tree's JSON in pieces.
        var write: ((String) -> Void) -> Void
    }

    func shapes() -> [Shape] {
        let n = children
        let photo = String(repeating: "iVBORw0KGgoAAAANSUhEUgAA", count: 300_000 / 24)
        let tile = String(repeating: "R0lGODlhAQABAIAAAP", count: 50_000 / 18)
        func object(_ node: String, _ count: Int, _ key: @escaping (Int) -> String, _ value: @escaping (Int) -> String)
            -> Shape
        {
            Shape(name: "", node: node) { out in
                out("{\"\(node)\":{")
                for i in 0..<count { out((i == 0 ? "" : ",") + "\"\(key(i))\":" + value(i)) }
                out("}}")
            }
        }
        func array(_ node: String, _ count: Int, _ value: @escaping (Int) -> String) -> Shape {
            Shape(name: "", node: node) { out in
                out("{\"\(node)\":[")
                for i in 0..<count { out((i == 0 ? "" : ",") + value(i)) }
                out("]}")
            }
        }
        let reading = { (_: Int) in "{\"h\":40,\"t\":20.5}" }
        let record = { (i: Int) in "{\"s\":\"x\(i)\",\"v\":\(i)}" }
        let user = { (i: Int) in "{\"username\":\"user\(i)\"}" }
        var list: [Shape] = []
        func add(_ name: String, _ shape: Shape) {
            var shape = shape
            shape.name = name
            list.append(shape)
        }
        add("logs, epoch-millisecond keys", object("logs", n, { String(1_497_918_951_912 + $0 * 1000) }, reading))
        add("logs, letter-prefixed keys", object("logs", n, { "k" + String(1_497_918_951_912 + $0 * 1000) }, reading))
        add("array of records", array("arr", n, record))
        add("object of the same records, letter keys", object("arr", n, { "k\($0)" }, record))
        add("users, numeric uids", object("users", n, { String(100_000_000 + $0 * 7) }, user))
        add("users, letter-prefixed uids", object("users", n, { "u" + String(100_000_000 + $0 * 7) }, user))
        add(
            "300 KB leaves under one node",
            object(
                "photos", largeMegabytes * 1_000_000 / 300_000,
                { "p\($0)" }, { "\"\($0)\(photo)\"" }))
        add("array of 50 KB strings", array("gallery", largeMegabytes / 5 * 1_000_000 / 50_000, { "\"\($0)\(tile)\"" }))
        return list
    }

    func run() throws {
        let (cluster, conninfo, admin) = try openFreshServer(work: work)
        defer { cluster.close() }
        print(
            "children per node: \(children); large values: about \(largeMegabytes) MB of 300 KB leaves, "
                + "\(largeMegabytes / 5) MB of 50 KB array elements; runs: \(runs)")
        print(
            "| shape | export s (median, min–max) | export MB/s | export peak RSS MB | get s | get MB/s | get peak RSS MB | get --limit-to-last 2 ms |"
        )
        print("|---|---|---|---|---|---|---|---|")
        var exportSeconds: [String: Double] = [:]
        for shape in shapes() {
            let file = "\(work)/\(shape.node)-\(shape.name.split(separator: " ").first!)-\(exportSeconds.count).json"
            writeFile(file, shape.write)
            _ = try spawn(admin, ["--db", conninfo, "-q", "import", file, "--yes"], stdout: "/dev/null")
            try? FileManager.default.removeItem(atPath: file)
            var exports: [Measurement] = [], gets: [Measurement] = [], limits: [Measurement] = []
            for _ in 0..<runs {
                exports.append(try spawn(admin, ["--db", conninfo, "-q", "export", "-"], stdout: "\(work)/out.json"))
                gets.append(try spawn(admin, ["--db", conninfo, "-q", "get", "/" + shape.node], stdout: "/dev/null"))
                limits.append(
                    try spawn(
                        admin,
                        [
                            "--db", conninfo, "-q", "get", "/" + shape.node, "--order-by-key",
                            "--limit-to-last", "2",
                        ], stdout: "/dev/null"))
            }
            let megabytes = Double(fileSize("\(work)/out.json")) / 1_000_000
            let export = median(exports.map(\.seconds)), get = median(gets.map(\.seconds))
            exportSeconds[shape.name] = export
            print(
                "| \(shape.name) | \(String(format: "%.2f (%.2f–%.2f)", export, exports.map(\.seconds).min()!, exports.map(\.seconds).max()!)) "
                    + "| \(format(megabytes / export)) | \(format(exports.map(\.peakMB).max()!)) | \(String(format: "%.2f", get)) "
                    + "| \(format(megabytes / get)) | \(format(gets.map(\.peakMB).max()!)) "
                    + "| \(String(format: "%.0f", median(limits.map(\.seconds)) * 1000)) |")
        }
        print("")
        for (digits, letters) in [
            ("logs, epoch-millisecond keys", "logs, letter-prefixed keys"),
            ("array of records", "object of the same records, letter keys"),
            ("users, numeric uids", "users, letter-prefixed uids"),
        ] {
            print(
                "\(digits) / \(letters): \(String(format: "%.2f×", exportSeconds[digits]! / exportSeconds[letters]!)) (export)"
            )
        }
    }
}
