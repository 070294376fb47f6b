import ArgumentParser
import Foundation
import Storage

/// `set PATH JSON`, as `firebase database:set`.
struct SetCommand: ConsoleCommand {
    static let configuration = CommandConfiguration(
        commandName: "set",
        abstract: "Write a JSON value at a path, replacing what was there (firebase database:set).",
        discussion: """
            One transaction, with import's rules: keys and values Firebase would refuse are refused (nothing \
            changes), known nodes are stored in their tables, and null removes the node; nulls and empty objects \
            inside vanish, an array is an integer-keyed object, and a key written twice counts with its last value. \
            A path inside a record (a post's poster/username) rewrites that record. As in Firebase, a value written \
            below a leaf replaces the leaf (set /cfg/n/x 1 turns the number at /cfg/n into {"x": 1}), and removing \
            a path below a leaf changes nothing. JSON is one argument: quote it for the shell.

            Replacing the whole tree (/) asks first on a terminal. A write that would leave the store empty is \
            refused unless --allow-empty or --yes says so, from a script too, as import refuses a file that holds \
            nothing. A leaf at the root (set / 5), which Firebase takes, is refused: the store holds named nodes.

            Examples:
              set /users/alice '{"username": "alice"}'
              set /posts/alice/-NxQ3bH0Jb2Sc5HWq5nQ/image_height 320
              set /config/motd '"closed for maintenance"'
            """)

    @Argument(help: "The Firebase path, such as /users/alice.") var path: String
    @Argument(help: "The value, as JSON.") var json: String
    @OptionGroup var emptying: EmptyingOptions

    func validate() throws { _ = try FirebasePath.keys(of: path) }

    func run(in session: Session) throws {
        try FirebaseWrite.run(.set(json: json), at: path, emptying: emptying, in: session)
    }
}

/// `--allow-empty` and `--yes`, taken by the write verbs that can delete: replacing the whole tree asks first on a
/// terminal, and leaving the store empty needs one of them, as import's does.
struct EmptyingOptions: ParsableArguments {
    @Flag(help: "Let this write leave the whole store empty (also: --yes).")
    var allowEmpty = false

    @OptionGroup var confirmation: Confirmation
}

/// What the write verbs share: the question before replacing the whole tree, and the report.
enum FirebaseWrite {
    /// Runs `write` at `path`; with `emptying` nil (push), nothing is asked and the store cannot be emptied.
    static func run(_ write: TreeWrite, at path: String, emptying: EmptyingOptions?, in session: Session) throws {
        let keys = try FirebasePath.keys(of: path)
        if let emptying, keys.isEmpty, !emptying.confirmation.confirm("Replace the whole tree?", in: session) {
            return
        }
        let allowsEmptying = emptying.map { $0.allowEmpty || $0.confirmation.yes } ?? false
        let report: WriteReport
        do {
            report = try session.store().write(write, at: keys, allowsEmptying: allowsEmptying)
        } catch var error as StorageError where error.kind == .malformedInput {
            let written: (verb: String, json: String)? =
                switch write {
                case .set(let json): ("set", json)
                case .push(let json): ("push", json)
                case .update, .remove: nil
                }
            if let written, let hint = quotingHint(for: written.json, writtenBy: written.verb, at: path) {
                error.hint = hint
            }
            throw error
        }
        let written = FirebasePath.string(of: report.path)
        if case .push = write { session.output.line(TerminalText.escaped(written)) }
        session.inform(
            "\(written): \(DomainViews.count(report.rowsWritten, "row")) written, "
                + "\(DomainViews.count(report.rowsRemoved, "row")) removed.")
    }

    /// For a value that is no JSON because it is a bare word (`set /config/motd hello`): how to write it as a
    /// string, quoted once for JSON and once for the shell.
    static func quotingHint(for text: String, writtenBy verb: String, at path: String) -> String? {
        let trimmed = text.drop { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }
        guard let first = trimmed.first, !"{[\"-0123456789".contains(first),
            !["true", "false", "null"].contains(where: { trimmed.hasPrefix($0) })
        else { return nil }
        let json = JSONWriter.string(String(trimmed.prefix(60)))
        return
            "a string is JSON in double quotes: \(verb) \(path) '\(json.replacingOccurrences(of: "'", with: "'\\''"))'"
    }
}
