import ArgumentParser
import Foundation
import Storage

/// `get PATH [--shallow] [--pretty] [--export]`, like `firebase database:get`.
struct Get: ConsoleCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the node at a Firebase path as JSON, as firebase database:get does.",
        discussion: """
            The node is read from the store in one snapshot and streamed: keys in RTDB order, numbers as
            JavaScript writes them, integer-keyed objects as arrays. A path that holds nothing prints null.
            Priorities are left out, as a REST GET does, unless --export. --shallow prints a leaf as it is and an
            object with each child replaced by true (a leaf child keeps its value).

            Examples:
              get /users/alice
              get /posts/alice --shallow
              get /chats/alice --pretty
              get / --shallow
              get /posts/alice -o alice-posts.json
            """)

    @Argument(help: "The Firebase path, such as /posts/UID.") var path: String
    @Flag(help: "Children as true (leaves keep their value), as the REST API's shallow=true.") var shallow = false
    @Flag(help: "Indent the JSON.") var pretty = false
    @Flag(help: "Keep priorities (.priority, .value), as the REST API's format=export.") var export = false
    @Option(name: .shortAndLong, help: "Write to this file instead of stdout (.gz compresses).") var output: String?
    @Flag(help: "With -o, replace the file if it exists.") var force = false

    func validate() throws {
        _ = try FirebasePath.keys(of: path)
    }

    func run(in session: Session) throws {
        let keys = try FirebasePath.keys(of: path)
        let options = JSONTextWriter.Options(isPretty: pretty, rendersArrays: true, keepsPriorities: export)
        let store = try session.store()
        guard let output else {
            session.output.flush()
            do {
                _ = try store.exportTree(at: keys, options: options, shallow: shallow) { bytes in
                    try OutputFile.writeAll(bytes, to: STDOUT_FILENO)
                }
                session.output.line()
            } catch OutputFile.Closed.byReader {
                // `get / | head`: the reader has what it wanted.
            }
            return
        }
        let file = try OutputFile(path: output, replacing: force)
        do {
            let gzip = output.hasSuffix(".gz") ? try GzipWriter { try file.write($0) } : nil
            let report = try store.exportTree(at: keys, options: options, shallow: shallow) { bytes in
                if let gzip { try gzip.write(bytes) } else { try file.write(bytes) }
            }
            try gzip?.finish()
            try file.commit()
            session.inform("Wrote \(report.bytes) bytes of \(path) to \(output).")
        } catch {
            file.discard()
            throw error
        }
    }
}
