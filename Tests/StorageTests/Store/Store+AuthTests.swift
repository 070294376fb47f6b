import Foundation
import PostgresClient
import PostgresTestSupport
import Testing

@testable import Storage

/// Accounts as `firebase auth:export` writes them, imported, compared, verified and exported again.
struct AccountImportTests {
    /// Every field, unicode, a federated-only account, a phone-only one, a disabled one, unknown members.
    static let accountsJSON = """
        {"users": [
        {"localId": "alice", "email": "alice@example.com", "emailVerified": true,
         "passwordHash": "lSrfV15cpx95/sZS2W9c9Kp6i/LVgQNDNC/qzrCnh1SAyZvqmZqAjTdn3aoItz+VHjoZilo78198JAdRuid5lQ==",
         "salt": "42xEC+ixf3L2lw==", "displayName": "Alice Ø 😀", "photoUrl": "https://example.com/a.png",
         "lastSignedInAt": "1700000000000", "createdAt": "1600000000000", "customAttributes": "{\\"admin\\":true}",
         "providerUserInfo": [{"providerId": "password", "rawId": "alice@example.com", "email": "alice@example.com"},
                              {"providerId": "google.com", "rawId": "1234", "displayName": "Alice, G",
                               "photoUrl": "https://g/a", "federatedId": "https://accounts.google.com/1234"}],
         "mfaInfo": [{"phoneInfo": "+15550001"}]},
        {"localId": "bob", "providerUserInfo": [{"providerId": "github.com", "rawId": "99", "screenName": "bobby"}],
         "createdAt": 1600000000001, "disabled": true},
        {"localId": "carol", "phoneNumber": "+15550002", "createdAt": "1600000000002",
         "providerUserInfo": [{"providerId": "phone", "rawId": "+15550002"}]}
        ]}
        """

    static var config: HashConfig {
        get throws { try HashConfig(parsing: try PasswordHashingTests.firebaseConfig) }
    }

    private func exported(_ store: Store, _ format: AccountFileFormat = .json) throws -> String {
        var bytes: [UInt8] = []
        _ = try store.exportAccounts(format: format) { bytes += $0 }
        return String(decoding: bytes, as: UTF8.self)
    }

    private func accounts(_ text: String, _ format: AccountFileFormat = .json) throws -> [AuthAccount] {
        var accounts: [AuthAccount] = []
        try AccountFile.read(
            MemorySource(text, chunkSize: 7), format: format, onAccount: { accounts.append($0) },
            onReject: { Issue.record("rejected \($0)") })
        return accounts
    }

    @Test func everyFieldRoundTripsAndASecondImportChangesNothing() throws {
        let store = try makeStore()
        let first = try store.importAccounts(
            from: MemorySource(Self.accountsJSON), options: AccountImportOptions(hashConfig: try Self.config))
        #expect(first.read == 3 && first.added == 3 && first.updated == 0 && first.withPassword == 1)
        #expect(first.hashConfig == .stored && !first.lacksHashConfig)
        let export = try exported(store)
        #expect(try accounts(export) == (try accounts(Self.accountsJSON)))
        let alice = try #require(try accounts(export).first)
        #expect(alice.extra["mfaInfo"] == #"[{"phoneInfo":"+15550001"}]"#)
        #expect(alice.providers.map(\.providerID) == ["password", "google.com"])
        // The same file, and the export of it: nothing differs, nothing is written.
        for text in [Self.accountsJSON, export] {
            let again = try store.importAccounts(
                from: MemorySource(text), options: AccountImportOptions(hashConfig: try Self.config))
            #expect(again.unchanged == 3 && again.added == 0 && again.updated == 0 && again.removed == 0)
            #expect(again.hashConfig == .unchanged)
        }
        // CSV keeps what its columns hold.
        let csv = try exported(store, .csv)
        let fromCSV = try accounts(csv, .csv)
        #expect(fromCSV.map(\.uid) == ["alice", "bob", "carol"])
        #expect(fromCSV[0].displayName == "Alice Ø 😀" && fromCSV[0].customAttributes == #"{"admin":true}"#)
        #expect(fromCSV[0].providers.map(\.providerID) == ["google.com"])
        #expect(fromCSV[0].providers[0].displayName == "Alice, G")
        #expect(fromCSV[1].disabled == true && fromCSV[2].phoneNumber == "+15550002")
        #expect(fromCSV[0].passwordHash == alice.passwordHash && fromCSV[0].createdAt == 1_600_000_000_000)
    }

    /// A line as firebase-tools writes it: a trailing comma, a display name with a comma wrapped in quotes, custom
    /// claims with doubled quotes.
    @Test func firebaseCSVLinesRead() throws {
        let line =
            "u1,u1@example.com,true,aGFzaA==,c2FsdA==,\"Doe, Jane\",https://p/u1,g1,g@example.com,,,,,,,,,,,,,,,"
            + "1600000000000,1700000000000,+15550003,false,\"{\"\"role\"\":\"\"admin\"\"}\",\n"
            + "u2,,false,,,,,,,,,,,,,,,,,,,,,1600000000001,,,,,\n"
        let parsed = try accounts(line, .csv)
        #expect(parsed.count == 2)
        #expect(parsed[0].displayName == "Doe, Jane" && parsed[0].customAttributes == #"{"role":"admin"}"#)
        #expect(
            parsed[0].providers == [
                {
                    var google = AuthProvider(providerID: "google.com")
                    google.rawID = "g1"
                    google.email = "g@example.com"
                    return google
                }()
            ])
        #expect(parsed[0].disabled == false && parsed[0].lastSignedInAt == 1_700_000_000_000)
        #expect(parsed[1].email == nil && parsed[1].passwordHash == nil && parsed[1].createdAt == 1_600_000_000_001)
    }

    @Test func mergeAddsAndUpdatesWhereReplaceAlsoRemoves() throws {
        let store = try makeStore()
        try store.importAccounts(from: MemorySource(Self.accountsJSON))
        let changed = """
            {"users": [{"localId": "alice", "email": "new@example.com"}, {"localId": "dave"}]}
            """
        let merge = try store.importAccounts(
            from: MemorySource(changed), options: AccountImportOptions(mode: .merge))
        #expect(merge.added == 1 && merge.updated == 1 && merge.removed == 0)
        #expect(try store.accountCount() == 4)
        let dry = try store.importAccounts(
            from: MemorySource(changed), options: AccountImportOptions(isDryRun: true))
        #expect(dry.removed == 2 && dry.unchanged == 2 && dry.isDryRun)
        #expect(try store.accountCount() == 4)
        let replace = try store.importAccounts(from: MemorySource(changed))
        #expect(replace.removed == 2 && replace.unchanged == 2)
        #expect(try accounts(try exported(store)).map(\.uid) == ["alice", "dave"])
        // Alice's password and providers went with the replace: the file's alice has neither.
        #expect(try store.verifyPassword(Array("user1password".utf8), uid: "alice") == .noPassword)
        #expect(
            try store.connection.query("SELECT count(*) FROM auth_providers")[0].decode(Int.self, at: 0) == 0)
    }

    @Test(arguments: [
        #"{"users": {"alice": {"username": "a"}}}"#,  // a database export
        #"{"users": [{"localId": "a"}, {"localId": "a"}]}"#,  // a uid twice
        #"{"users": [{"localId": "a"}"#,  // cut short
        #"{"users": [], "extra": 1}"#,
        #"[{"localId": "a"}]"#,
        #"{"users": [{"email": "no uid"}]}"#,  // a reject, over the default of none
        #"{"users": []}"#,  // would remove every account
    ])
    func malformedFilesLeaveTheStoreUnchanged(_ text: String) throws {
        let store = try makeStore()
        try store.importAccounts(from: MemorySource(Self.accountsJSON))
        let before = try exported(store)
        #expect(throws: StorageError.self) { try store.importAccounts(from: MemorySource(text)) }
        #expect(try exported(store) == before)
    }

    @Test func rejectsAreNamedAndAllowedUpToTheirMaximum() throws {
        let store = try makeStore()
        let text = """
            {"users": [{"localId": "a"}, {"localId": "b", "emailVerified": "yes"}, 5,
                       {"localId": "c", "passwordHash": "not base64!"}, {"localId": "\(String(repeating: "x", count: 129))"},
                       {"localId": "d", "createdAt": "yesterday"}, {"localId": "e", "providerUserInfo": [{"rawId": "1"}]}]}
            """
        var rejects: [ImportReject] = []
        let report = try store.importAccounts(
            from: MemorySource(text), options: AccountImportOptions(maximumRejects: 6), onReject: { rejects.append($0) }
        )
        #expect(report.read == 1 && report.rejected == 6)
        #expect(rejects.map(\.path) == ["/users/1", "/users/2", "/users/3", "/users/4", "/users/5", "/users/6"])
        #expect(rejects[0].reason == "emailVerified must be true or false")
        #expect(rejects[1].reason == "an account must be a JSON object" && rejects[1].value == "5")
        #expect(throws: StorageError.self) {
            try store.importAccounts(from: MemorySource(text), options: AccountImportOptions(maximumRejects: 5))
        }
    }

    /// Hashes computed by Python's hashlib and the cryptography package: another implementation of the same
    /// construction than the store's.
    @Test func passwordsHashedElsewhereVerify() throws {
        let script = """
            import base64, hashlib, json, sys
            from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
            key = base64.b64decode("jxspr8Ki0RYycVU8zykbdLGjFQ3McFUH0uiiTvC8pVMXAn210wjLNmdZJzxUECKbm0QsEmYUSDzZvpjeJ9WmXA==")
            users = []
            for i, password in enumerate(["hunter2", "pässwörd 😀", "", "x" * 200]):
                salt = bytes([i * 7 % 256] * (i + 8))
                derived = hashlib.scrypt(password.encode(), salt=salt + base64.b64decode("Bw=="), n=2**14, r=8, p=1, dklen=32)
                cipher = Cipher(algorithms.AES(derived), modes.CTR(b"\\0" * 16)).encryptor()
                hashed = cipher.update(key) + cipher.finalize()
                users.append({"localId": "u%d" % i, "passwordHash": base64.b64encode(hashed).decode(),
                              "salt": base64.b64encode(salt).decode()})
            json.dump({"users": users}, sys.stdout)
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = ["-c", script]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        try #require(process.terminationStatus == 0, "python3 with the cryptography package")
        let store = try makeStore()
        try store.importAccounts(
            from: MemorySource(Array(output)), options: AccountImportOptions(hashConfig: try Self.config))
        for (index, password) in ["hunter2", "pässwörd 😀", "", String(repeating: "x", count: 200)].enumerated() {
            #expect(try store.verifyPassword(Array(password.utf8), uid: "u\(index)") == .matches)
            #expect(try store.verifyPassword(Array((password + "!").utf8), uid: "u\(index)") == .doesNotMatch)
        }
    }

    @Test func verifySaysWhatItCannotDo() throws {
        let store = try makeStore()
        try store.importAccounts(from: MemorySource(Self.accountsJSON))
        // No parameters stored: refused, not a mismatch.
        let missing = #expect(throws: StorageError.self) {
            try store.verifyPassword(Array("user1password".utf8), uid: "alice")
        }
        #expect(missing?.kind == .refused)
        let unknown = #expect(throws: StorageError.self) { try store.verifyPassword([], uid: "nobody") }
        #expect(unknown?.kind == .notFound)
        #expect(try store.verifyPassword(Array("x".utf8), uid: "bob") == .noPassword)
        try store.importAccounts(
            from: MemorySource(Self.accountsJSON), options: AccountImportOptions(hashConfig: try Self.config))
        #expect(try store.verifyPassword(Array("user1password".utf8), uid: "alice") == .matches)
        #expect(try store.verifyPassword(Array("user1passwore".utf8), uid: "alice") == .doesNotMatch)
        let other = try HashConfig(parsing: "algorithm: HMAC_SHA256\nbase64_signer_key: c2VjcmV0")
        let replaced = try store.importAccounts(
            from: MemorySource(Self.accountsJSON), options: AccountImportOptions(hashConfig: other))
        #expect(replaced.hashConfig == .replaced)
        let unverifiable = #expect(throws: StorageError.self) {
            try store.verifyPassword(Array("user1password".utf8), uid: "alice")
        }
        #expect(unverifiable?.message.contains("HMAC_SHA256") == true)
    }

    /// The cron recipe's role reads every table in public, and nothing of the hashes or the signer key.
    @Test func aRoleThatMaySelectTheTablesCannotReadTheSecrets() throws {
        let database = try TestPostgres.makeDatabase()
        let owner = Store(connection: try database.connect())
        try importJSON(#"{"users": {"alice": {"username": "a"}, "erin": {"username": "e"}}}"#, into: owner)
        try owner.importAccounts(
            from: MemorySource(Self.accountsJSON), options: AccountImportOptions(hashConfig: try Self.config))
        let role = "reader_" + database.name
        try owner.connection.execute("CREATE ROLE \(identifier: role)")
        try owner.connection.execute("GRANT SELECT ON ALL TABLES IN SCHEMA public TO \(identifier: role)")
        defer {
            _ = try? owner.connection.execute("DROP OWNED BY \(identifier: role)")
            _ = try? owner.connection.execute("DROP ROLE \(identifier: role)")
        }
        let reader = Store(connection: try database.connect())
        try reader.connection.execute("SET ROLE \(identifier: role)")
        let results = try reader.check([.accountMissing, .profileMissing])
        #expect(results.map(\.examples) == [["/users/erin"], ["/users/bob", "/users/carol"]])
        #expect(try reader.accountCount() == 3)
        for statement: Query in [
            "SELECT * FROM auth_secrets.password_hashes", "SELECT * FROM auth_secrets.hash_config",
            "SELECT * FROM auth_secrets.account_rows",
        ] {
            let error = #expect(throws: StorageError.self) { try reader.connection.query(statement) }
            #expect(error?.sqlState == .insufficientPrivilege)
        }
        #expect(throws: StorageError.self) { try reader.verifyPassword(Array("user1password".utf8), uid: "alice") }
    }

    @Test func withoutAccountsTheLinkIsNotChecked() throws {
        let store = try makeStore()
        try importJSON(#"{"users": {"alice": {"username": "a"}}}"#, into: store)
        #expect(try store.check([.accountMissing, .profileMissing]).allSatisfy(\.isClean))
    }
}
