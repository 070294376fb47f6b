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
        case let error as StorageError:
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
}
