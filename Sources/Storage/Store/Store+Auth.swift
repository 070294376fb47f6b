import FirebaseTree

extension Store {
    /// Imports the accounts of a `firebase auth:export` file (JSON or CSV), streaming, in one transaction: with
    /// `.replace` the store's accounts become the file's, with `.merge` the file's are added or updated. Only
    /// accounts that differ are written, so importing the same file again changes nothing. An account that cannot
    /// be stored goes to `onReject`; more than `options.maximumRejects` of them, a uid twice, or a file that is no
    /// export fail the import with nothing changed. Nothing is hashed: passwords are checked by `verifyPassword`.
    ///
    /// ```swift
    /// let report = try store.importAccounts(from: FileDescriptorSource(descriptor: fd, name: "users.json"))
    /// ```
    @discardableResult
    public func importAccounts(
        from source: some ByteSource, format: AccountFileFormat = .json,
        options: AccountImportOptions = AccountImportOptions(), onReject: (ImportReject) throws -> Void = { _ in }
    ) throws -> AccountImportReport {
        try accounts.importAccounts(from: source, format: format, options: options, onReject: onReject)
    }

    /// Whether `password` (its UTF-8) is the password of the account `uid`, by the stored hash parameters
    /// (Firebase's modified scrypt); the hashes are compared in constant time. Throws `.notFound` for an unknown
    /// uid, `.refused` when no parameters are stored or they are not SCRYPT.
    public func verifyPassword(_ password: [UInt8], uid: String) throws -> PasswordVerdict {
        try accounts.verifyPassword(password, uid: uid)
    }

    /// Writes every account, by uid, in the format `firebase auth:import` reads (uids, hashes, salts, providers
    /// and timestamps as they were imported); returns how many. One snapshot.
    public func exportAccounts(format: AccountFileFormat = .json, to write: ([UInt8]) throws -> Void) throws -> Int {
        try accounts.exportAccounts(format: format, to: write)
    }

    /// The stored hash parameters, nil when none are. The signer key is a secret: never print it.
    public func hashConfig() throws -> HashConfig? {
        try accounts.hashConfig()
    }

    /// How many Firebase Auth accounts the store has.
    public func accountCount() throws -> Int {
        try accounts.count()
    }
}
