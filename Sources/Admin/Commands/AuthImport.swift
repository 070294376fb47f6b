import ArgumentParser
import Foundation
import Storage

/// `auth import FILE`: the accounts of a `firebase auth:export` file, in one transaction.
struct AuthImport: ConsoleCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Import the accounts of a firebase auth:export file (JSON or CSV), in one transaction.",
        discussion: """
            FILE is what `firebase auth:export FILE` wrote (FILE.gz is decompressed as it is read), or - for stdin. \
            It is read as a stream, one account at a time, so its size does not matter. A name ending in .csv is \
            read as auth:export's CSV (--input-format says otherwise). Each account keeps its uid (localId), email, \
            password hash and salt, names, photo, phone, timestamps, custom claims and providers; members this \
            version does not know are kept and exported again. Nothing is hashed on import.

            --mode replace (the default) makes the store's accounts the file's: accounts missing from it are \
            removed. --mode merge adds and updates the file's accounts and keeps the others. Only accounts that \
            differ are written, so importing the same file twice changes nothing the second time. A file with no \
            accounts does not remove a store's accounts without --allow-empty.

            --hash-config FILE stores the project's password hash parameters, the block the Firebase console shows \
            (hash_config { algorithm: SCRYPT, base64_signer_key: …, base64_salt_separator: …, rounds: …, \
            mem_cost: … }), pasted as it is; they replace any stored, and are stored once for every account. \
            Without it the stored parameters stay. auth verify needs them.

            An account that cannot be stored (no localId, a field of the wrong type, a hash that is not base64, a \
            uid over 128 characters) is a reject: the first aborts the import unless --max-rejects lets some \
            through; each is written as a JSON line to the rejects file (default FILE.rejects.jsonl), as import \
            writes its own. A uid twice in the file, or a file that is not an auth:export at all, is refused with \
            nothing changed.

            Examples:
              auth import users.json --hash-config hash-config.txt
              auth import users.csv --mode merge
              auth import users.json --dry-run
            """)

    @Argument(help: "The auth:export file to read, or - for stdin.", completion: .file())
    var file: String

    @Option(help: "The password hash parameters, as the Firebase console shows them.", completion: .file())
    var hashConfig: String?

    @Option(help: "replace (the accounts become the file's) or merge (add and update).")
    var mode: ImportOptions.Mode = .replace

    @Option(help: "json or csv (default: csv for a name ending in .csv, else json).")
    var inputFormat: AccountFileFormat?

    @Flag(help: "Read, compare and report, then roll back.")
    var dryRun = false

    @Option(help: "Let up to N rejected accounts through instead of aborting on the first.")
    var maxRejects = 0

    @Option(help: "Where to write rejected accounts as JSON lines (default: FILE.rejects.jsonl).", completion: .file())
    var rejects: String?

    @Flag(help: "Replace an existing rejects file.")
    var force = false

    @Flag(help: "Let a file with no accounts remove every account of the store.")
    var allowEmpty = false

    @Option(help: "Output format of the report (default: the session's).")
    var format: OutputFormat?

    func validate() throws {
        guard maxRejects >= 0 else { throw ValidationError("--max-rejects must be 0 or more") }
    }

    func run(in session: Session) throws {
        let config = try hashConfig.map { path in
            let text: String
            do {
                text = try String(contentsOfFile: path, encoding: .utf8)
            } catch {
                throw ConsoleError(
                    .commandFailed, "cannot read the hash parameters \(path): \(error.localizedDescription)")
            }
            return try HashConfig(parsing: text)
        }
        let input = try InputFile(path: file)
        defer { input.close() }
        let store = try session.store()
        let rejectsFile = try RejectsFile(
            path: rejects ?? Import.defaultRejectsPath(for: file), replacing: force,
            keepsOnlyIfCommitted: rejects == nil, command: "auth import")
        let options = AccountImportOptions(
            mode: mode, isDryRun: dryRun, maximumRejects: maxRejects, hashConfig: config, allowsEmptying: allowEmpty)
        let report: AccountImportReport
        do {
            report = try store.importAccounts(
                from: input.source(), format: inputFormat ?? AccountFileFormat(fileName: file), options: options,
                onReject: { try rejectsFile.write($0) })
            try rejectsFile.finish(committed: !dryRun)
        } catch {
            try? rejectsFile.finish(committed: false)
            throw ConsoleError.from(error).appending(rejectsFile.summary)
        }
        if let summary = rejectsFile.summary { session.warn(summary) }
        if report.lacksHashConfig {
            session.warn(
                "accounts have password hashes but no hash parameters are stored: auth verify cannot check them "
                    + "until auth import --hash-config FILE stores them")
        }
        print(report, config: config, to: session)
    }

    private func print(_ report: AccountImportReport, config: HashConfig?, to session: Session) {
        let parameters: String? =
            switch report.hashConfig {
            case .kept: nil
            case .unchanged: "the hash parameters were already stored"
            case .stored: "hash parameters stored (\(Self.describe(config)))"
            case .replaced: "hash parameters replaced (\(Self.describe(config)))"
            }
        if (format ?? session.format) == .json {
            session.output.line(
                JSONWriter.object([
                    ("file", JSONWriter.string(file)), ("read", String(report.read)), ("added", String(report.added)),
                    ("updated", String(report.updated)), ("unchanged", String(report.unchanged)),
                    ("removed", String(report.removed)), ("rejected", String(report.rejected)),
                    ("with_password", String(report.withPassword)),
                    ("hash_config", JSONWriter.string(report.hashConfig.rawValue)),
                    ("dry_run", report.isDryRun ? "true" : "false"),
                    ("seconds", String(format: "%.3f", report.seconds)),
                ]))
            return
        }
        let verb = report.isDryRun ? "Would import" : "Imported"
        session.inform(
            "\(verb) \(DomainViews.count(report.read, "account")) from \(file): \(report.added) added, "
                + "\(report.updated) updated, \(report.unchanged) unchanged, \(report.removed) removed"
                + (report.rejected > 0 ? ", \(report.rejected) rejected" : "")
                + "; \(report.withPassword) with a password"
                + (parameters.map { "; \($0)" } ?? "")
                + " in \(DomainViews.duration(report.seconds))"
                + (report.isDryRun ? " (dry run: nothing was changed)." : "."))
    }

    /// The parameters without the signer key, which is a secret.
    static func describe(_ config: HashConfig?) -> String {
        guard let config else { return "none" }
        guard config.isVerifiable, let rounds = config.rounds, let memoryCost = config.memoryCost else {
            return config.algorithm
        }
        return "\(config.algorithm), rounds \(rounds), mem_cost \(memoryCost)"
    }
}
