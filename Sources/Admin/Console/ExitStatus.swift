/// The console's exit codes, documented in `admin --help` and the README.
enum ExitStatus: Int32, Comparable {
    /// Every command succeeded.
    case success = 0
    /// A command failed.
    case commandFailed = 1
    /// The database could not be reached (or the connection was lost).
    case cannotConnect = 2
    /// `check` found integrity violations, `verify` found the store and an export different, or `auth verify` was
    /// given a password that is not the account's.
    case violationsFound = 3
    /// `mirror`'s stream was cancelled by the database (its rules no longer allow the read).
    case streamCancelled = 5
    /// `mirror`'s stream ended with `auth_revoked`: the credential expired.
    case credentialRevoked = 6
    /// The command line or a command was malformed (BSD's EX_USAGE).
    case usage = 64
    /// `mirror`'s stream was malformed, or held an event the store refuses (BSD's EX_DATAERR).
    case malformedStream = 65

    /// The more serious of two outcomes wins when a script continues past errors.
    static func < (lhs: ExitStatus, rhs: ExitStatus) -> Bool {
        lhs.severity < rhs.severity
    }

    private var severity: Int {
        switch self {
        case .success: 0
        case .violationsFound: 1
        case .credentialRevoked: 2
        case .streamCancelled: 3
        case .commandFailed: 4
        case .malformedStream: 5
        case .usage: 6
        case .cannotConnect: 7
        }
    }

    /// The table printed by `--help` and kept in the README.
    static let documentation = """
        Exit codes:
          0   success
          1   a command failed
          2   cannot connect to the database (or the connection was lost)
          3   violations (check), differences (verify), a wrong password (auth verify)
          5   mirror: the database cancelled the stream (the rules deny the read)
          6   mirror: the credential was revoked (auth_revoked): reconnect
          64  usage error: unknown command, bad option or argument
          65  mirror: a malformed stream, or an event the store refuses
        """
}
