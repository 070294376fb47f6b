import ArgumentParser
import Foundation
import Storage

/// `auth verify UID`: whether a password is the account's, by its Firebase hash.
struct AuthVerify: ConsoleCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Check a password against an account's Firebase hash (exit 0 if it matches, 3 if not).",
        discussion: """
            The password is read from stdin (its first line), or asked for without echo on a terminal; never from \
            the command line, which the shell's history and ps would show, and never written anywhere. The hash is \
            Firebase's modified scrypt with the stored hash parameters (auth import --hash-config), compared in \
            constant time; one check takes about one scrypt (50-100 ms at Firebase's mem_cost 14).

            Exit status 0: the password is the account's. 3: it is not, or the account has no password (it signs \
            in with a provider or a phone). 1: no such uid, no hash parameters stored, or hashes of another \
            algorithm than SCRYPT (kept, exported, but not verifiable here).

            Examples:
              auth verify alice < password.txt
              printf '%s\\n' "$PASSWORD" | admin auth verify alice
            """)

    @Argument(help: "The account's uid (its localId, the key of /users/{uid}).")
    var uid: String

    /// A password is a line; anything longer is not one.
    static let maximumPasswordBytes = 4096

    func run(in session: Session) throws {
        let store = try session.store()
        let password = try Self.readPassword(for: uid, in: session)
        let verdict = try store.verifyPassword(password, uid: uid)
        switch verdict {
        case .matches:
            session.inform("The password is the account \(uid)'s.")
        case .doesNotMatch:
            throw ConsoleError(.violationsFound, "the password is not the account \(uid)'s")
        case .noPassword:
            throw ConsoleError(
                .violationsFound, "the account \(uid) has no password (it signs in otherwise): no password is its")
        }
    }

    /// The first line of stdin, without its line break; asked for without echo when stdin is a terminal.
    static func readPassword(for uid: String, in session: Session) throws -> [UInt8] {
        let isTerminal = isatty(STDIN_FILENO) == 1
        var saved = termios()
        if isTerminal {
            session.diagnostics.write("Password for \(uid): ")
            session.diagnostics.flush()
            tcgetattr(STDIN_FILENO, &saved)
            var silent = saved
            silent.c_lflag &= ~tcflag_t(ECHO)
            tcsetattr(STDIN_FILENO, TCSAFLUSH, &silent)
        }
        defer {
            if isTerminal {
                tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved)
                session.diagnostics.line()
            }
        }
        var password: [UInt8]
        switch InputLine.read(maximumBytes: maximumPasswordBytes) {
        case .line(let bytes): password = bytes
        case .end(let bytes) where !bytes.isEmpty: password = bytes
        case .end: throw ConsoleError(.commandFailed, "no password on stdin")
        case .interrupted: throw ConsoleError(.commandFailed, "no password was given")
        case .tooLong:
            throw ConsoleError(.commandFailed, "the password on stdin is longer than \(maximumPasswordBytes) bytes")
        }
        if password.last == UInt8(ascii: "\r") { password.removeLast() }
        return password
    }
}
