import Foundation

/// What Tab offers for the word under the cursor.
enum Completion: Equatable {
    /// These words (the editor keeps those that start with the typed text); a space follows a unique one.
    case words([String])
    /// Words that may go on, such as Firebase paths: no space follows a unique one.
    case prefixes([String])
    /// File names, as a shell completes them.
    case files
}

/// Line editing, history and Tab completion through libedit's readline interface, loaded at run time: Debian
/// installs the library (libedit2) but not its headers, and GNU readline is GPL. Without the library the console
/// still works, reading plain lines.
final class LineEditor {
    private typealias ReadLine = @convention(c) (UnsafePointer<CChar>?) -> UnsafeMutablePointer<CChar>?
    private typealias HistoryFile = @convention(c) (UnsafePointer<CChar>?) -> Int32
    private typealias AddHistory = @convention(c) (UnsafePointer<CChar>?) -> Int32
    private typealias Stifle = @convention(c) (Int32) -> Void
    private typealias CompletionHook =
        @convention(c) (UnsafePointer<CChar>?, Int32, Int32)
        -> UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?

    private let readLineFunction: ReadLine
    private let addHistoryFunction: AddHistory
    private let writeHistoryFunction: HistoryFile
    private let historyFile: String?

    /// The completer of the one editor in the process; the C hook has no context argument.
    nonisolated(unsafe) private static var completer: ((_ wordsBefore: String, _ word: String) -> Completion)?
    nonisolated(unsafe) private static var lineBuffer: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
    nonisolated(unsafe) private static var completionOver: UnsafeMutablePointer<Int32>?
    nonisolated(unsafe) private static var appendCharacter: UnsafeMutablePointer<Int32>?

    /// The editor, or nil when libedit cannot be loaded. `historyFile` is read now and written after each line.
    static func load(
        historyFile: String?, historySize: Int = 1000,
        completer: @escaping (_ wordsBefore: String, _ word: String) -> Completion
    ) -> LineEditor? {
        guard let library = dlopen("libedit.so.2", RTLD_NOW | RTLD_LOCAL) else { return nil }
        func symbol<T>(_ name: String, as type: T.Type) -> T? {
            dlsym(library, name).map { unsafeBitCast($0, to: type) }
        }
        guard let readLine = symbol("readline", as: ReadLine.self),
            let addHistory = symbol("add_history", as: AddHistory.self),
            let readHistory = symbol("read_history", as: HistoryFile.self),
            let writeHistory = symbol("write_history", as: HistoryFile.self),
            let stifle = symbol("stifle_history", as: Stifle.self)
        else { return nil }
        if let name = dlsym(library, "rl_readline_name") {
            // Lets ~/.editrc bind keys for this program alone ("admin:bind ...").
            name.assumingMemoryBound(to: UnsafePointer<CChar>?.self).pointee = UnsafePointer(strdup("admin"))
        }
        Self.completer = completer
        lineBuffer = dlsym(library, "rl_line_buffer")?.assumingMemoryBound(to: UnsafeMutablePointer<CChar>?.self)
        completionOver = dlsym(library, "rl_attempted_completion_over")?.assumingMemoryBound(to: Int32.self)
        appendCharacter = dlsym(library, "rl_completion_append_character")?.assumingMemoryBound(to: Int32.self)
        if let hook = dlsym(library, "rl_attempted_completion_function") {
            hook.assumingMemoryBound(to: CompletionHook?.self).pointee = { text, start, _ in
                LineEditor.complete(text: text.map { String(cString: $0) } ?? "", start: Int(start))
            }
        }
        stifle(Int32(historySize))
        if let historyFile { _ = readHistory(historyFile) }
        return LineEditor(
            readLine: readLine, addHistory: addHistory, writeHistory: writeHistory, historyFile: historyFile)
    }

    private init(
        readLine: @escaping ReadLine, addHistory: @escaping AddHistory, writeHistory: @escaping HistoryFile,
        historyFile: String?
    ) {
        readLineFunction = readLine
        addHistoryFunction = addHistory
        writeHistoryFunction = writeHistory
        self.historyFile = historyFile
    }

    /// The next line typed, without its newline; nil at end of input (Ctrl-D) or when interrupted (see
    /// `Interrupt.isPending`).
    func readLine(prompt: String) -> String? {
        guard let line = readLineFunction(prompt) else { return nil }
        defer { free(line) }
        return String(cString: line)
    }

    /// Adds a line to the history and saves the history file, so a console that is killed loses nothing.
    func remember(_ line: String) {
        guard !line.allSatisfy(\.isWhitespace) else { return }
        _ = addHistoryFunction(line)
        if let historyFile {
            _ = writeHistoryFunction(historyFile)
            chmod(historyFile, 0o600)
        }
    }

    /// readline's completion hook: the matches for `text`, which begins at byte `start` of the line, as a
    /// malloc'ed, NULL-terminated array whose first entry replaces `text` (their longest common prefix).
    private static func complete(text: String, start: Int) -> UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? {
        let line = lineBuffer?.pointee.map { Array(String(cString: $0).utf8) } ?? []
        let before = String(decoding: line.prefix(start), as: UTF8.self)
        guard let completion = completer?(before, text) else { return nil }
        let words: [String]
        switch completion {
        case .files:
            // libedit's own file completion ends a directory with a space, as any word: Tab again would not
            // go into it.
            words = Completer.fileNames(matching: text)
            let isFile = words.count == 1 && !words[0].hasSuffix("/")
            appendCharacter?.pointee = isFile ? Int32(UInt8(ascii: " ")) : 0
        case .words(let list):
            words = list
            appendCharacter?.pointee = Int32(UInt8(ascii: " "))
        case .prefixes(let list):
            words = list
            appendCharacter?.pointee = 0
        }
        completionOver?.pointee = 1
        let matches = Array(Set(words.filter { $0.hasPrefix(text) })).sorted()
        guard let first = matches.first else { return nil }
        var common = first
        for match in matches.dropFirst() {
            common = String(zip(common, match).prefix { $0 == $1 }.map(\.0))
        }
        // A single match ends with the character to append, written into it: libedit (as Debian builds it) does
        // not append `rl_completion_append_character` itself, so a completed word was left open.
        let append = appendCharacter?.pointee ?? 0
        appendCharacter?.pointee = 0
        let ending = append > 0 ? String(UnicodeScalar(UInt8(append))) : ""
        let entries = matches.count == 1 ? [first + ending] : [common] + matches
        // readline frees the array and its strings with free().
        guard let memory = malloc(MemoryLayout<UnsafeMutablePointer<CChar>?>.stride * (entries.count + 1)) else {
            return nil
        }
        let array = memory.bindMemory(to: UnsafeMutablePointer<CChar>?.self, capacity: entries.count + 1)
        for (index, entry) in entries.enumerated() { array[index] = strdup(entry) }
        array[entries.count] = nil
        return array
    }
}
