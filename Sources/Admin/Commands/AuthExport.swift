import ArgumentParser
import Foundation
import Storage

/// `auth export [FILE|-]`: the accounts in the format `firebase auth:import` reads.
struct AuthExport: ConsoleCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Export the accounts as firebase auth:import reads them (JSON or CSV).",
        discussion: """
            The accounts as they were imported (uids, password hashes and salts, providers, timestamps, custom \
            claims, unknown members), by uid, from one snapshot: `firebase auth:import FILE --hash-algo=SCRYPT \
            --hash-key=… --salt-separator=… --rounds=… --mem-cost=…` with the stored parameters restores them in \
            a Firebase project. A name ending in .csv (or --output-format csv) writes auth:export's CSV, which has \
            columns for the google.com, facebook.com, twitter.com and github.com providers only; .gz compresses.

            FILE defaults to a new timestamped file under exports/. The file holds password hashes: it is created \
            mode 0600 under a temporary name and renamed when complete; an existing file is only replaced with \
            --force. - writes to stdout.

            Examples:
              auth export
              auth export accounts.json
              auth export accounts.csv --force
            """)

    @Argument(
        help: "Where to write: a file, - for stdout (default: exports/auth-TIMESTAMP.json).", completion: .file())
    var file: String?

    @Option(help: "json or csv (default: csv for a name ending in .csv, else json).")
    var outputFormat: AccountFileFormat?

    @Flag(help: "Replace FILE if it exists.")
    var force = false

    func run(in session: Session) throws {
        let store = try session.store()
        let destination =
            file ?? Export.defaultPath(named: "auth")
        let format = outputFormat ?? AccountFileFormat(fileName: destination)
        let createsDirectory = file == nil && !FileManager.default.fileExists(atPath: "exports")
        guard
            let count = try OutputFile.writing(
                toFileOrStandardOutput: destination, replacing: force, createsDirectory: file == nil, session: session,
                { write in
                    try store.exportAccounts(format: format) { bytes in try bytes.withUnsafeBufferPointer(write) }
                })
        else { return }
        if createsDirectory {
            session.inform(
                "Created the directory exports/ in \(FileManager.default.currentDirectoryPath) for it "
                    + "(give a FILE to write elsewhere).")
        }
        if count == 0 { session.warn("the store has no accounts: the export holds none") }
        session.inform(
            "Exported \(DomainViews.count(count, "account"))" + (destination == "-" ? "" : " to \(destination)") + ".")
    }
}
