import Foundation
import Storage

/// `hostile-readers`: every command that reads JSON, on the inputs that crashed or bloated one of them before the
/// readers were bounded (issue 69): nesting past Firebase's 32 levels in four shapes and a gzip bomb (16 MB of `[`
/// in 16 KB), tokens of `megabytes` MB (a string plain and escaped, a number, a key), 2 million top-level keys out
/// of order, and a record of half that size that the store lacks. Each run against a private embedded server
/// holding a small tree: its exit status, seconds, peak RSS (the ceiling is 128 MB for any input) and the bytes
/// of its error (the ceiling is 4 KB).
struct HostileReadersBenchmark {
    let megabytes: Int
    let work: String

    /// The shapes, by the name `write` knows them by.
    static let shapes = [
        "deep-closed.json", "deep-open.json", "deep-objects.json", "deep-leaf.json", "bracket-bomb.json.gz",
        "long-string.json", "long-escapes.json", "long-number.json", "long-key.json", "wide-top.json",
        "big-record.json",
    ]

    /// Writes shape `name` of `megabytes` MB to `path` (in a child process: see `HostileImportBenchmark`).
    static func write(shape name: String, to path: String) throws {
        let megabytes = Int(ProcessInfo.processInfo.environment["HOSTILE_MB"] ?? "200") ?? 200
        let chunk = 1 << 20
        func repeated(_ piece: String, bytes: Int) -> (((String) -> Void) -> Void) {
            { out in
                let block = String(repeating: piece, count: max(1, chunk / piece.utf8.count))
                for _ in 0..<(bytes / block.utf8.count) { out(block) }
            }
        }
        if name.hasSuffix(".gz") {
            _ = FileManager.default.createFile(atPath: path, contents: nil)
            guard let handle = FileHandle(forWritingAtPath: path) else { throw CocoaError(.fileWriteUnknown) }
            let writer = try GzipWriter { handle.write(Data($0)) }
            let block = [UInt8](repeating: UInt8(ascii: "["), count: chunk)
            for _ in 0..<16 { try block.withUnsafeBufferPointer { try writer.write($0) } }
            try writer.finish()
            try handle.close()
            return
        }
        writeFile(path) { out in
            switch name {
            case "deep-closed.json":
                out(String(repeating: "[", count: 300_000) + "1" + String(repeating: "]", count: 300_000))
            case "deep-open.json": out(String(repeating: "[", count: 1 << 20))
            case "deep-objects.json": out(String(repeating: #"{"a":"#, count: 200_000))
            case "deep-leaf.json":
                out(String(repeating: #"{"a":"#, count: 100_000) + "1" + String(repeating: "}", count: 100_000))
            case "long-string.json":
                out(#"{"a":""#)
                repeated("x", bytes: megabytes << 20)(out)
                out(#""}"#)
            case "long-escapes.json":
                out(#"{"a":""#)
                repeated(#"\u4e2d"#, bytes: megabytes << 20)(out)
                out(#""}"#)
            case "long-number.json":
                out(#"{"a":1"#)
                repeated("0", bytes: megabytes << 20)(out)
                out("}")
            case "long-key.json":
                out(#"{""#)
                repeated("k", bytes: megabytes << 20)(out)
                out(#"":1}"#)
            case "wide-top.json":
                // Two million keys in a shuffled order (a fixed permutation: 7919 is prime to the count).
                out("{")
                let count = 2_000_000
                for index in 0..<count { out((index == 0 ? "" : ",") + #""k\#((index * 7919) % count)":1"#) }
                out("}")
            case "big-record.json":
                out(#"{"users":{"u":{"username":"u""#)
                let field = String(repeating: "x", count: 90)
                for index in 0..<(megabytes << 20) / 2 / 104 { out(#","f\#(index)":"\#(field)""#) }
                out("}}}")
            default: fatalError("no shape \(name)")
            }
        }
    }

    func run() throws {
        let (cluster, conninfo, admin) = try openFreshServer(work: work)
        defer { cluster.close() }
        let small = work + "/small.json"
        try #"{"kept":{"list":[1,"two",true]},"x":{"y":1}}"#.write(toFile: small, atomically: false, encoding: .utf8)
        print("| input | file MB | command | exit | seconds | peak RSS MB | error bytes |")
        print("|---|---|---|---|---|---|---|")
        for shape in Self.shapes {
            let file = work + "/" + shape
            var child = ProcessInfo.processInfo.environment
            child["HOSTILE_MB"] = String(megabytes)
            _ = try runChild(["hostile-readers-write", shape, file], environment: child)
            defer { try? FileManager.default.removeItem(atPath: file) }
            var commands: [(String, [String], String?)] = [
                ("import", ["import", file, "--jobs", "1", "--yes"], nil),
                ("import --jobs 2", ["import", file, "--jobs", "2", "--yes"], nil),
                ("verify", ["verify", file], nil), ("sync", ["sync", file, "--yes"], nil),
            ]
            if !shape.hasSuffix(".gz") { commands.insert(("import -", ["import", "-", "--yes"], file), at: 2) }
            if fileSize(file) < 16 << 20 {
                // A write verb's JSON is one script line (an argument holds at most 128 KB).
                let script = work + "/set.admin"
                let json = try String(contentsOfFile: file, encoding: .isoLatin1)
                try "set /x '\(json)'\n".write(toFile: script, atomically: false, encoding: .isoLatin1)
                commands.append(("set", ["-f", script], nil))
            }
            for (name, arguments, stdin) in commands {
                _ = try spawn(admin, ["--db", conninfo, "-q", "import", small, "--yes"], stdout: "/dev/null")
                let errors = work + "/stderr.txt"
                let run = try spawn(
                    admin, ["--db", conninfo] + arguments, stdout: "/dev/null", stderr: errors, stdin: stdin,
                    status: nil)
                print(
                    "| \(shape) | \(format(Double(fileSize(file)) / 1_000_000)) | \(name) | \(run.status) "
                        + "| \(String(format: "%.2f", run.seconds)) | \(format(run.peakMB)) | \(fileSize(errors)) |")
            }
        }
    }
}
