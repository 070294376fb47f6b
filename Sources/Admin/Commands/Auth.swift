import ArgumentParser
import Storage

extension AccountFileFormat: ExpressibleByArgument {}

/// `auth import|verify|export`: the Firebase Auth accounts the tree is keyed by.
struct Auth: ConsoleCommand {
    static let configuration = CommandConfiguration(
        commandName: "auth",
        abstract: "Firebase Auth accounts: import them with their uids and hashes, verify a password, export them.",
        discussion: """
            The accounts come from `firebase auth:export users.json` (or users.csv); the password hash parameters \
            from the Firebase console (Authentication, Users, the three-dot menu, Password hash parameters), pasted into a file. \
            Accounts keep their uids, so /users/{uid} and every node keyed by a uid stay theirs; check's \
            account_missing and profile_missing watch the link. The hashes and the signer key are \
            readable by the store's owner only.

            Examples:
              auth import users.json --hash-config hash-config.txt
              auth verify alice < password.txt
              auth export accounts.json
            """,
        subcommands: [AuthImport.self, AuthVerify.self, AuthExport.self])

    func run(in session: Session) throws {
        throw ConsoleError(.usage, "auth what? import, verify or export (see help auth)")
    }
}
