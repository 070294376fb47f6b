import Storage

/// The console layer's error: what failed, the exit status it leads to, and the underlying cause.
struct ConsoleError: Error, CustomStringConvertible {
    /// The exit status a script ends with when this error stops it.
    var status: ExitStatus
    /// The message shown to the operator.
    var message: String

    init(_ status: ExitStatus, _ message: String) {
        self.status = status
        self.message = message
    }

    var description: String { message }

    /// Bytes of a message shown at most: a message longer than this (a value quoted whole, a list of a million
    /// places) keeps its start and its end, so that no error buries a terminal or a cron mail.
    static let maximumMessageBytes = 4000

    /// `message` in at most `maximumMessageBytes` bytes: its first bytes and its last, around what was left out.
    static func bounded(_ message: String) -> String {
        let count = message.utf8.count
        guard count > maximumMessageBytes else { return message }
        let head = maximumMessageBytes * 3 / 5, tail = maximumMessageBytes / 4
        var start = message.utf8.index(message.utf8.startIndex, offsetBy: head)
        while UTF8.isContinuation(message.utf8[start]) { start = message.utf8.index(before: start) }
        var end = message.utf8.index(message.utf8.endIndex, offsetBy: -tail)
        while UTF8.isContinuation(message.utf8[end]) { end = message.utf8.index(after: end) }
        let omitted = message.utf8.distance(from: start, to: end)
        return String(message[..<start]) + "…(\(omitted) bytes of this message left out)…" + String(message[end...])
    }

    /// The error with one more line of explanation, when there is one.
    func appending(_ line: String?) -> ConsoleError {
        guard let line else { return self }
        return ConsoleError(status, message + "\n" + line)
    }

    /// Wraps any error thrown by a command into a console error with the right exit status.
    static func from(_ error: Error) -> ConsoleError {
        switch error {
        case let error as ConsoleError:
            return error
        case var error as StorageError:
            if let remedy = error.remedy { error.hint = hint(for: remedy, storageHint: error.hint) }
            switch error.kind {
            case .connectionFailed, .connectionLost, .cluster:
                return ConsoleError(.cannotConnect, error.description)
            default:
                return ConsoleError(.commandFailed, error.description)
            }
        case let error as TreeError:
            return ConsoleError(.commandFailed, error.description)
        default:
            return ConsoleError(.commandFailed, String(describing: error))
        }
    }

    /// Storage's remedy in the console's words: the option or command that applies it.
    private static func hint(for remedy: StorageError.Remedy, storageHint: String?) -> String {
        switch remedy {
        case .allowRejects(let allowed) where allowed == 0:
            "--max-rejects N lets up to N rejected values through (they are listed and written to the rejects file)"
        case .allowRejects(let allowed):
            "more than --max-rejects \(allowed) values were rejected"
        case .importWholeRecord(let path):
            "Import the whole record with --at \(FirebasePath.string(of: path))."
        case .allowEmptying:
            "Nothing was changed. If emptying it is what you want, allow it with --allow-empty (or --yes)."
        case .reclaimSpace:
            "The transaction was rolled back, but what it wrote keeps its disk space until VACUUM gives it back: "
                + "free some space, then run `vacuum`, and CHECKPOINT as a superuser to recycle the write-ahead log "
                + "it filled."
        case .waitForMaintenance:
            "Wait for it to finish, or queue behind it with --wait SECONDS."
        case .waitLonger:
            (storageHint ?? "Try again later.")
                + " `settings lock_timeout SECONDS` lets commands wait longer (0: as long as it takes)."
        case .chooseDataDirectory:
            (storageHint ?? "Choose another data directory.") + " admin takes it from --data-dir or ADMIN_DATA_DIR."
        case .useAnotherServer:
            (storageHint ?? "Use a PostgreSQL server elsewhere.") + " Name it with --db or DATABASE_URL."
        }
    }
}
