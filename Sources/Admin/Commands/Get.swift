import ArgumentParser
import Foundation
import Storage

/// `get PATH [--shallow] [--order-by…] [--limit-to-…] [--start-at|--end-at|--equal-to V] [--pretty] [--export]`,
/// like `firebase database:get`.
struct Get: ConsoleCommand {
    static let configuration = CommandConfiguration(
        commandName: "get",
        abstract: "Print the node at a Firebase path as JSON, as firebase database:get does.",
        discussion: """
            The node is read from the store in one snapshot and streamed: keys in RTDB order, numbers as \
            JavaScript writes them, integer-keyed objects as arrays. A path that holds nothing prints null. \
            Priorities are left out, as a REST GET does, unless --export. --shallow prints a leaf as it is and an \
            object with each child replaced by true (a leaf child keeps its value).

            A query selects children of the node, with the Realtime Database's rules: order by key (integer keys \
            first, numerically), by value or by a child's value (null, false, true, numbers, strings, objects; \
            ties by key); then --start-at, --end-at, --equal-to on that order; then --limit-to-first or \
            --limit-to-last. Values are JSON (5, true, "text"); anything else is taken as a string. The selected \
            children print as one object in key order.

            Examples:
              get /users/alice
              get /posts/alice --shallow
              get /timeline/alice --order-by-key --limit-to-last 5
              get /chats/alice --order-by lastMessageSent --limit-to-last 10
              get /posts --order-by timestamp --start-at 1497918951000
              get /users --order-by username --equal-to '"alice"'
              get /posts/alice -o alice-posts.json
            """)

    @Argument(help: "The Firebase path, such as /posts/UID.") var path: String
    @Flag(help: "Children as true (leaves keep their value), as the REST API's shallow=true.") var shallow = false
    @Flag(help: "Indent the JSON.") var pretty = false
    @Flag(help: "Keep priorities (.priority, .value), as the REST API's format=export.") var export = false
    @Option(name: .shortAndLong, help: "Write to this file instead of stdout (.gz compresses).") var output: String?
    @Flag(help: "With -o, replace the file if it exists.") var force = false
    @Flag(help: "Order children by key.") var orderByKey = false
    @Flag(help: "Order children by their value.") var orderByValue = false
    @Option(help: ArgumentHelp("Order children by the value at this path below each.", valueName: "child"))
    var orderBy: String?
    @Option(help: ArgumentHelp("Only the first N children in the order.", valueName: "n")) var limitToFirst: Int?
    @Option(help: ArgumentHelp("Only the last N children in the order.", valueName: "n")) var limitToLast: Int?
    @Option(parsing: .unconditional, help: ArgumentHelp("Children ordered at or after this value.", valueName: "value"))
    var startAt: String?
    @Option(
        parsing: .unconditional, help: ArgumentHelp("Children ordered at or before this value.", valueName: "value"))
    var endAt: String?
    @Option(parsing: .unconditional, help: ArgumentHelp("Children ordered at exactly this value.", valueName: "value"))
    var equalTo: String?

    func validate() throws {
        _ = try FirebasePath.keys(of: path)
        _ = try query()
    }

    /// The query the options ask for; nil without any.
    private func query() throws -> TreeQuery? {
        let orders: [TreeQuery.Order] =
            (orderByKey ? [.key] : []) + (orderByValue ? [.value] : [])
            + (try orderBy.map { [.child(try FirebasePath.keys(of: $0))] } ?? [])
        let filtered = limitToFirst != nil || limitToLast != nil || startAt != nil || endAt != nil || equalTo != nil
        guard let order = orders.first else {
            if filtered {
                throw ValidationError(
                    "limits and --start-at, --end-at, --equal-to need an order (--order-by-key, --order-by-value or --order-by CHILD)"
                )
            }
            return nil
        }
        guard orders.count == 1 else {
            throw ValidationError("give one order: --order-by-key, --order-by-value or --order-by CHILD")
        }
        guard limitToFirst == nil || limitToLast == nil else {
            throw ValidationError("give --limit-to-first or --limit-to-last, not both")
        }
        for limit in [limitToFirst, limitToLast].compactMap({ $0 }) where limit <= 0 {
            throw ValidationError("limits must be positive")
        }
        guard !shallow else { throw ValidationError("--shallow cannot be combined with a query, as in the REST API") }
        guard equalTo == nil || (startAt == nil && endAt == nil) else {
            // The SDKs' equalTo() sets both ends: "Starting point was already set".
            throw ValidationError("--equal-to sets both ends of the range: give it alone, or --start-at and --end-at")
        }
        func value(_ text: String?) -> TreeValue? {
            guard let text else { return nil }
            if order == .key {
                // Keys are strings: 5 and "5" both mean the key 5.
                return .string(
                    (try? TreeValue.parse(json: text)).flatMap { if case .string(let key) = $0 { key } else { nil } }
                        ?? text)
            }
            return (try? TreeValue.parse(json: text)) ?? .string(text)
        }
        return TreeQuery(
            order: order, start: value(startAt), end: value(endAt), equal: value(equalTo),
            limitToFirst: limitToFirst, limitToLast: limitToLast)
    }

    func run(in session: Session) throws {
        let keys = try FirebasePath.keys(of: path)
        let options = JSONTextWriter.Options(isPretty: pretty, rendersArrays: true, keepsPriorities: export)
        let store = try session.store()
        let query = try query()
        let read = { (write: (UnsafeBufferPointer<UInt8>) throws -> Void) throws -> ExportReport in
            if let query { return try store.exportTree(at: keys, query: query, options: options, to: write) }
            return try store.exportTree(
                at: keys, options: ExportOptions(format: options, shallow: shallow), to: write)
        }
        guard let output else {
            session.output.flush()
            // The JSON's last line ends in the stream, so the pager (when it starts) shows it; pretty JSON ends
            // with its own newline. nil: `get / | head` or a quit pager, the reader has what it wanted.
            _ = try OutputFile.writingStandardOutput(through: session.pagedStream()) { write in
                let report = try read(write)
                if !pretty { try [UInt8(ascii: "\n")].withUnsafeBufferPointer { try write($0) } }
                return report
            }
            return
        }
        let report = try OutputFile.writing(to: output, replacing: force, read)
        session.inform("Wrote \(report.bytes) bytes of \(path) to \(output).")
    }
}
