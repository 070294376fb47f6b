import FirebaseTree
import Foundation
internal import PostgresClient

/// How `Store.importAccounts` stores a file's accounts.
public struct AccountImportOptions: Sendable {
    /// `.replace`: the accounts become the file's (those missing from it are removed); `.merge`: the file's are
    /// added or updated and the others stay.
    public var mode: ImportOptions.Mode
    /// Read and compare everything, then roll back.
    public var isDryRun: Bool
    /// How many rejected accounts the import may leave out before it fails.
    public var maximumRejects: Int
    /// The project's hash parameters, stored with the accounts (replacing those stored); nil keeps what is stored.
    public var hashConfig: HashConfig?
    /// Whether a replace with a file of no accounts may remove every account.
    public var allowsEmptying: Bool

    /// Options as given; by default a replace that fails on the first reject.
    public init(
        mode: ImportOptions.Mode = .replace, isDryRun: Bool = false, maximumRejects: Int = 0,
        hashConfig: HashConfig? = nil, allowsEmptying: Bool = false
    ) {
        self.mode = mode
        self.isDryRun = isDryRun
        self.maximumRejects = maximumRejects
        self.hashConfig = hashConfig
        self.allowsEmptying = allowsEmptying
    }
}

/// What an account import did (or, for a dry run, would have done).
public struct AccountImportReport: Sendable, Equatable {
    /// Accounts read from the file and kept (rejects not counted).
    public var read = 0
    /// Accounts the store did not have.
    public var added = 0
    /// Accounts the store had otherwise (any field, password or provider).
    public var updated = 0
    /// Accounts the store had exactly so.
    public var unchanged = 0
    /// Accounts a replace removed, since the file no longer has them.
    public var removed = 0
    /// Accounts left out as rejects.
    public var rejected = 0
    /// Accounts of the file with a password hash.
    public var withPassword = 0
    /// What happened to the stored hash parameters.
    public var hashConfig = HashConfigChange.kept
    /// Whether accounts have password hashes and no hash parameters are stored to verify them with.
    public var lacksHashConfig = false
    /// Whether nothing was committed.
    public var isDryRun = false
    /// How long it took.
    public var seconds = 0.0

    /// The same findings; the time is not one.
    public static func == (a: Self, b: Self) -> Bool {
        [a.read, a.added, a.updated, a.unchanged, a.removed, a.rejected, a.withPassword]
            == [b.read, b.added, b.updated, b.unchanged, b.removed, b.rejected, b.withPassword]
            && (a.hashConfig, a.lacksHashConfig, a.isDryRun) == (b.hashConfig, b.lacksHashConfig, b.isDryRun)
    }
}

/// What an import did to the stored hash parameters.
public enum HashConfigChange: String, Sendable, Equatable {
    /// None given: those stored (if any) stay.
    case kept
    /// Given and the same as those stored.
    case unchanged
    /// Given and stored for the first time.
    case stored
    /// Given and different from those stored, which they replaced.
    case replaced
}

/// Whether a password is an account's.
public enum PasswordVerdict: Sendable, Equatable {
    /// It hashes to the account's hash.
    case matches
    /// It does not.
    case doesNotMatch
    /// The account has no password (it signs in with a provider or a phone): nothing matches.
    case noPassword
}

/// Firebase Auth's accounts in the store (migration 0024): imported from `auth:export` files, checked against
/// passwords, exported again for `auth:import`.
struct Accounts {
    let connection: StoreConnection

    /// The incoming columns, in the order of `auth_secrets.account_rows` (and of the COPY).
    private static let columns = [
        "uid", "email", "email_verified", "display_name", "photo_url", "phone_number", "disabled", "created_at",
        "last_signed_in_at", "custom_attributes", "extra", "password_hash", "salt", "providers",
    ]

    /// Every column but the uid, each as `column` writes it (`i."email"`), for comparing two rows.
    private static func compared(_ column: (String) -> Query) -> Query {
        columns.dropFirst().map(column).joined(separator: ", ")
    }

    /// The columns of `auth_accounts` among them.
    private static let accountColumns = Array(columns[0...10])

    /// `Store.importAccounts`: see there.
    func importAccounts(
        from source: some ByteSource, format: AccountFileFormat, options: AccountImportOptions,
        onReject: (ImportReject) throws -> Void
    ) throws -> AccountImportReport {
        let started = ContinuousClock.now
        var report = AccountImportReport()
        report.isDryRun = options.isDryRun
        try options.hashConfig?.validate()
        try connection.withTransaction(rollback: options.isDryRun) {
            // Imports one after another; readers and the app's writes to the tree go on.
            try connection.execute("LOCK TABLE auth_accounts IN SHARE ROW EXCLUSIVE MODE")
            try connection.execute(
                """
                CREATE TEMP TABLE auth_incoming ON COMMIT DROP AS
                    SELECT * FROM auth_secrets.account_rows WITH NO DATA
                """)
            try connection.copyIn("COPY auth_incoming (\(Query.identifiers(Self.columns))) FROM STDIN") { writer in
                try AccountFile.read(
                    source, format: format,
                    onAccount: { account in
                        try Self.append(account, to: writer)
                        report.read += 1
                        if account.passwordHash != nil { report.withPassword += 1 }
                    },
                    onReject: { reject in
                        report.rejected += 1
                        try onReject(reject)
                        if report.rejected > options.maximumRejects {
                            throw StorageError(
                                .malformedInput,
                                "more than \(options.maximumRejects) rejected account"
                                    + (options.maximumRejects == 1 ? "" : "s") + " (\(reject.path): \(reject.reason))",
                                context: "nothing was imported")
                        }
                    })
            }
            try refuseDuplicates()
            try refuseEmptying(report, options)
            try connection.execute(
                """
                CREATE TEMP TABLE auth_changed ON COMMIT DROP AS
                    SELECT i.*, r.uid IS NULL AS is_new
                    FROM auth_incoming i LEFT JOIN auth_secrets.account_rows r ON r.uid = i.uid
                    WHERE r.uid IS NULL
                        OR (\(Self.compared { "i.\(identifier: $0)" })) IS DISTINCT FROM (\(Self.compared { "r.\(identifier: $0)" }))
                """)
            let counts = try connection.query(
                "SELECT count(*) FILTER (WHERE is_new), count(*) FILTER (WHERE NOT is_new) FROM auth_changed")[0]
            report.added = try counts.decode(Int.self, at: 0)
            report.updated = try counts.decode(Int.self, at: 1)
            report.unchanged = report.read - report.added - report.updated
            if options.mode == .replace {
                report.removed = try removeAccountsMissing()
            }
            try writeChanged()
            if let config = options.hashConfig {
                report.hashConfig = try store(config)
            }
            let hasConfig = try !connection.query("SELECT 1 FROM auth_secrets.hash_config LIMIT 1").isEmpty
            let hasHashes = try !connection.query(
                "SELECT 1 FROM auth_secrets.password_hashes WHERE password_hash IS NOT NULL LIMIT 1"
            ).isEmpty
            report.lacksHashConfig = !hasConfig && hasHashes
            try connection.execute("DROP TABLE auth_incoming, auth_changed")
        }
        report.seconds = (ContinuousClock.now - started).seconds
        return report
    }

    private static func append(_ account: AuthAccount, to writer: CopyInWriter) throws {
        try writer.append(account.uid)
        try writer.append(account.email)
        writer.append(account.emailVerified)
        try writer.append(account.displayName)
        try writer.append(account.photoURL)
        try writer.append(account.phoneNumber)
        writer.append(account.disabled)
        writer.append(account.createdAt)
        writer.append(account.lastSignedInAt)
        try writer.append(account.customAttributes)
        try writer.append(AccountFile.json(extra: account.extra))
        try writer.append(account.passwordHash)
        try writer.append(account.salt)
        var providers: [UInt8] = [UInt8(ascii: "[")]
        for (index, provider) in account.providers.enumerated() {
            if index > 0 { providers.append(UInt8(ascii: ",")) }
            providers += AccountFile.json(provider)
        }
        providers.append(UInt8(ascii: "]"))
        try writer.append(String(decoding: providers, as: UTF8.self))
        try writer.endRow()
    }

    /// A uid twice in one file: which of the two is the account cannot be told, so the file is refused.
    private func refuseDuplicates() throws {
        let repeated = try connection.query(
            "SELECT uid FROM auth_incoming GROUP BY uid HAVING count(*) > 1 ORDER BY uid COLLATE \"C\" LIMIT 5"
        ).map { try $0.decode(String.self, at: 0) }
        guard let first = repeated.first else { return }
        throw StorageError(
            .malformedInput,
            "the uid \"\(first.prefix(128))\" is in the file more than once"
                + (repeated.count > 1
                    ? " (and \(repeated.dropFirst().map { "\"\($0.prefix(128))\"" }.joined(separator: ", ")))" : ""),
            context: "nothing was imported")
    }

    private func refuseEmptying(_ report: AccountImportReport, _ options: AccountImportOptions) throws {
        guard report.read == 0, options.mode == .replace, !options.allowsEmptying else { return }
        let stored = try connection.query("SELECT count(*) FROM auth_accounts")[0].decode(Int.self, at: 0)
        guard stored > 0 else { return }
        throw StorageError(
            .refused, "the file has no accounts: replacing would remove all \(stored) accounts of the store",
            context: "nothing was imported")
    }

    /// Removes the accounts the file does not have, with their passwords and providers; returns how many.
    private func removeAccountsMissing() throws -> Int {
        try connection.execute(
            "DELETE FROM auth_providers p WHERE NOT EXISTS (SELECT 1 FROM auth_incoming i WHERE i.uid = p.uid)")
        try connection.execute(
            """
            DELETE FROM auth_secrets.password_hashes h
            WHERE NOT EXISTS (SELECT 1 FROM auth_incoming i WHERE i.uid = h.uid)
            """)
        return try connection.execute(
            "DELETE FROM auth_accounts a WHERE NOT EXISTS (SELECT 1 FROM auth_incoming i WHERE i.uid = a.uid)")
    }

    /// Stores the accounts of `auth_changed` whole: the account's row, its password and its providers, each
    /// removed and written again.
    private func writeChanged() throws {
        try connection.execute("DELETE FROM auth_accounts a USING auth_changed c WHERE a.uid = c.uid")
        try connection.execute(
            """
            INSERT INTO auth_accounts (\(Query.identifiers(Self.accountColumns)))
            SELECT \(Query.identifiers(Self.accountColumns)) FROM auth_changed
            """)
        try connection.execute(
            "DELETE FROM auth_secrets.password_hashes h USING auth_changed c WHERE h.uid = c.uid")
        try connection.execute(
            """
            INSERT INTO auth_secrets.password_hashes (uid, password_hash, salt)
            SELECT uid, password_hash, salt FROM auth_changed WHERE password_hash IS NOT NULL OR salt IS NOT NULL
            """)
        try connection.execute("DELETE FROM auth_providers p USING auth_changed c WHERE p.uid = c.uid")
        try connection.execute(
            """
            INSERT INTO auth_providers
                (uid, position, provider_id, raw_id, email, display_name, photo_url, federated_id, extra)
            SELECT c.uid, e.position, e.value ->> 'providerId', e.value ->> 'rawId', e.value ->> 'email',
                e.value ->> 'displayName', e.value ->> 'photoUrl', e.value ->> 'federatedId',
                e.value - ARRAY['providerId', 'rawId', 'email', 'displayName', 'photoUrl', 'federatedId']
            FROM auth_changed c, jsonb_array_elements(c.providers) WITH ORDINALITY AS e(value, position)
            """)
    }

    /// Stores `config` in place of what is stored; says whether that changed anything.
    private func store(_ config: HashConfig) throws -> HashConfigChange {
        let stored = try hashConfig()
        if stored == config { return .unchanged }
        try connection.execute("DELETE FROM auth_secrets.hash_config")
        try connection.execute(
            """
            INSERT INTO auth_secrets.hash_config (algorithm, signer_key, salt_separator, rounds, mem_cost)
            VALUES (\(config.algorithm), \(config.signerKey), \(config.saltSeparator), \(config.rounds),
                \(config.memoryCost))
            """)
        return stored == nil ? .stored : .replaced
    }

    /// The stored hash parameters, nil when none are.
    func hashConfig() throws -> HashConfig? {
        try connection.query(
            "SELECT algorithm, signer_key, salt_separator, rounds, mem_cost FROM auth_secrets.hash_config"
        ).first.map { row in
            HashConfig(
                algorithm: try row.decode(String.self, at: 0), signerKey: try row.decode(String?.self, at: 1),
                saltSeparator: try row.decode(String?.self, at: 2), rounds: try row.decode(Int?.self, at: 3),
                memoryCost: try row.decode(Int?.self, at: 4))
        }
    }

    /// `Store.verifyPassword`: see there.
    func verifyPassword(_ password: [UInt8], uid: String) throws -> PasswordVerdict {
        let (row, config) = try connection.withTransaction(isolation: .repeatableRead, readOnly: true) {
            let row = try connection.query(
                """
                SELECT h.password_hash, h.salt FROM auth_accounts a
                LEFT JOIN auth_secrets.password_hashes h ON h.uid = a.uid
                WHERE a.uid = \(uid)
                """
            ).first.map { (try $0.decode(String?.self, at: 0), try $0.decode(String?.self, at: 1)) }
            return (row, try hashConfig())
        }
        guard let (hash, salt) = row else {
            throw StorageError(.notFound, "no account has the uid \"\(uid.prefix(128))\"")
        }
        guard let hash, let expected = Base64.decode(hash) else { return .noPassword }
        guard let config else {
            throw StorageError(
                .refused, "no password hash parameters are stored",
                hint: "Import them with the accounts: auth import FILE --hash-config PARAMETERS-FILE (the Firebase "
                    + "console shows them under Authentication, Users, the three-dot menu, Password hash parameters).")
        }
        guard config.isVerifiable else {
            throw StorageError(
                .refused, "the stored hashes are \(config.algorithm) hashes, which cannot be verified here",
                hint: "Only Firebase's own SCRYPT hashes can be; the others are kept and exported as they came.")
        }
        let computed = try config.hash(password: password, salt: Base64.decode(salt ?? "") ?? [])
        return constantTimeEqual(computed, expected) ? .matches : .doesNotMatch
    }

    /// `Store.exportAccounts`: see there.
    func exportAccounts(format: AccountFileFormat, to write: ([UInt8]) throws -> Void) throws -> Int {
        try connection.withTransaction(isolation: .repeatableRead, readOnly: true) {
            if format == .json { try write(Array("{\"users\": [\n".utf8)) }
            var count = 0
            try connection.beginCopyOut(
                """
                COPY (SELECT \(Query.identifiers(Self.columns)) FROM auth_secrets.account_rows ORDER BY uid COLLATE "C")
                TO STDOUT
                """)
            var row = CopyRow()
            while let line = try connection.nextCopyOutRow() {
                row.read(line)
                let account = try Self.account(from: row)
                switch format {
                case .json: try write((count > 0 ? Array(",\n".utf8) : []) + AccountFile.json(account))
                case .csv: try write(AccountFile.csv(account))
                }
                count += 1
            }
            if format == .json { try write(Array("\n]}\n".utf8)) }
            return count
        }
    }

    private static func account(from row: CopyRow) throws -> AuthAccount {
        func flag(_ column: Int) -> Bool? { row[column].map { $0 == "t" } }
        func integer(_ column: Int) -> Int64? { row[column].flatMap { Int64($0) } }
        var account = AuthAccount(uid: try row.text(0))
        account.email = row[1]
        account.emailVerified = flag(2)
        account.displayName = row[3]
        account.photoURL = row[4]
        account.phoneNumber = row[5]
        account.disabled = flag(6)
        account.createdAt = integer(7)
        account.lastSignedInAt = integer(8)
        account.customAttributes = row[9]
        account.extra = try AccountFile.members(ofObject: try row.text(10))
        account.passwordHash = row[11]
        account.salt = row[12]
        var reader = JSONReader(source: MemorySource(try row.text(13)))
        try reader.next()
        while try reader.moveToNextChild() {
            account.providers.append(try AccountFile.parseProvider(&reader))
        }
        return account
    }

    /// How many accounts the store has.
    func count() throws -> Int {
        try connection.query("SELECT count(*) FROM auth_accounts")[0].decode(Int.self, at: 0)
    }
}
