import Foundation
import PostgresTestSupport
import Testing

/// `auth import`, `auth verify` and `auth export` as an operator runs them: files, stdin, exit statuses, the
/// password never on the command line or the screen.
struct AuthTests {
    static let accounts = """
        {"users": [
        {"localId": "alice", "email": "alice@example.com", "emailVerified": true,
         "passwordHash": "lSrfV15cpx95/sZS2W9c9Kp6i/LVgQNDNC/qzrCnh1SAyZvqmZqAjTdn3aoItz+VHjoZilo78198JAdRuid5lQ==",
         "salt": "42xEC+ixf3L2lw==", "createdAt": "1600000000000",
         "providerUserInfo": [{"providerId": "password", "rawId": "alice@example.com"}]},
        {"localId": "bob", "providerUserInfo": [{"providerId": "google.com", "rawId": "99"}]}
        ]}
        """

    /// The sample's hash parameters (firebase/scrypt's published vector).
    static var hashConfig: String {
        get throws { try String(contentsOf: Repository.url("exports/sample-auth-hash-config.txt"), encoding: .utf8) }
    }

    private func prepared() throws -> (db: [String], directory: String) {
        let database = try databaseHolding(#"{"users": {"alice": {"username": "alice"}, "erin": {"username": "e"}}}"#)
        let directory = try makeTemporaryDirectory("admin-auth")
        try Self.accounts.write(toFile: directory + "/users.json", atomically: true, encoding: .utf8)
        try Self.hashConfig.write(toFile: directory + "/hash-config.txt", atomically: true, encoding: .utf8)
        return (["--db", database.conninfo], directory)
    }

    @Test func importVerifyAndExport() throws {
        let (db, directory) = try prepared()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let imported = try AdminProcess.run(
            db + ["auth", "import", "users.json", "--hash-config", "hash-config.txt"], directory: directory)
        #expect(imported.status == 0, "\(imported.stderr)")
        #expect(imported.stdout.isEmpty)
        #expect(
            imported.stderr.hasPrefix(
                "Imported 2 accounts from users.json: 2 added, 0 updated, 0 unchanged, 0 removed; 1 with a password; hash parameters stored (SCRYPT, rounds 8, mem_cost 14) in "
            ))
        #expect(!imported.stderr.contains("jxspr8"), "the signer key is never printed")
        let again = try AdminProcess.run(
            db + ["auth", "import", "users.json", "--format", "json"], directory: directory)
        #expect(again.status == 0 && again.stdout.contains(#""unchanged": 2"#), "\(again.stdout)\(again.stderr)")

        let verify = { (uid: String, input: String) throws -> AdminRun in
            try AdminProcess.run(db + ["auth", "verify", uid], input: input)
        }
        #expect(try verify("alice", "user1password\n").status == 0)
        #expect(try verify("alice", "user1password\r\n").status == 0)
        let wrong = try verify("alice", "user1password \n")
        #expect(wrong.status == 3 && wrong.stderr.contains("not the account alice's"), "\(wrong.stderr)")
        #expect(!wrong.stderr.contains("user1password"))
        #expect(try verify("bob", "anything\n").status == 3)
        let unknown = try verify("nobody", "x\n")
        #expect(unknown.status == 1 && unknown.stderr.contains("no account has the uid \"nobody\""))
        #expect(try verify("alice", "").status == 1)
        // Never from the command line.
        #expect(try AdminProcess.run(db + ["auth", "verify", "alice", "user1password"]).status == 64)

        let exported = try AdminProcess.run(db + ["auth", "export", "accounts.json"], directory: directory)
        #expect(exported.status == 0 && exported.stderr.contains("Exported 2 accounts to accounts.json."))
        let attributes = try FileManager.default.attributesOfItem(atPath: directory + "/accounts.json")
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        let text = try String(contentsOfFile: directory + "/accounts.json", encoding: .utf8)
        #expect(
            text.contains(
                #""passwordHash":"lSrfV15cpx95/sZS2W9c9Kp6i/LVgQNDNC/qzrCnh1SAyZvqmZqAjTdn3aoItz+VHjoZilo78198JAdRuid5lQ==""#
            ))
        let refused = try AdminProcess.run(db + ["auth", "export", "accounts.json"], directory: directory)
        #expect(refused.status == 1, "an existing file is only replaced with --force")
        let csv = try AdminProcess.run(db + ["auth", "export", "accounts.csv"], directory: directory)
        #expect(csv.status == 0)
        // The CSV reads back as the same accounts but what CSV has no column for.
        let fromCSV = try AdminProcess.run(
            db + ["auth", "import", "accounts.csv", "--mode", "merge", "--dry-run"], directory: directory)
        #expect(fromCSV.status == 0 && fromCSV.stderr.contains("Would import 2 accounts"), "\(fromCSV.stderr)")

        // The link between the tree and the accounts is checked.
        let check = try AdminProcess.run(db + ["check", "--only", "account_missing,profile_missing"])
        #expect(check.status == 3)
        #expect(check.stdout.contains("/users/erin") && check.stdout.contains("/users/bob"), "\(check.stdout)")
        let status = try AdminProcess.run(db + ["status"])
        #expect(status.stdout.contains("auth_accounts"), "\(status.stdout)")
    }

    @Test func rejectsGoToTheirFileAndMalformedFilesChangeNothing() throws {
        let (db, directory) = try prepared()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try #"{"users": [{"localId": "a"}, {"localId": "b", "disabled": "no"}]}"#
            .write(toFile: directory + "/some-bad.json", atomically: true, encoding: .utf8)
        let failed = try AdminProcess.run(db + ["auth", "import", "some-bad.json"], directory: directory)
        #expect(failed.status == 1 && failed.stderr.contains("disabled must be true or false"), "\(failed.stderr)")
        let passed = try AdminProcess.run(
            db + ["auth", "import", "some-bad.json", "--max-rejects", "1"], directory: directory)
        #expect(passed.status == 0, "\(passed.stderr)")
        let rejects = try String(contentsOfFile: directory + "/some-bad.json.rejects.jsonl", encoding: .utf8)
        #expect(
            rejects.contains(#""path": "/users/1""#) && rejects.contains(#""reason": "disabled must be true or false""#)
        )
        try #"{"users": {"alice": {"username": "a"}}}"#
            .write(toFile: directory + "/tree.json", atomically: true, encoding: .utf8)
        let tree = try AdminProcess.run(db + ["auth", "import", "tree.json"], directory: directory)
        #expect(tree.status == 1 && tree.stderr.contains("database export"), "\(tree.stderr)")
        let export = try AdminProcess.run(db + ["auth", "export", "-"])
        #expect(export.stdout.contains(#""localId":"a""#) && !export.stdout.contains(#""localId":"alice""#))
    }

    /// On a terminal the password is asked for without echo.
    @Test(.enabled(if: Terminal.isAvailable)) func onATerminalThePasswordIsNotEchoed() throws {
        let (db, directory) = try prepared()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        #expect(
            try AdminProcess.run(
                db + ["auth", "import", "users.json", "--hash-config", "hash-config.txt"], directory: directory
            ).status == 0)
        let script = directory + "/verify.sh"
        try """
        \(shellQuoted(AdminProcess.executable.path)) \(db.map(shellQuoted).joined(separator: " ")) auth verify alice
        echo status=$?
        sleep 30
        """.write(toFile: script, atomically: true, encoding: .utf8)
        let command = "sh \(shellQuoted(script))"
        let terminal = try Terminal(command, environment: ["TERM": "xterm"], columns: 120, rows: 20)
        try expectScreen(terminal, "Password for alice:")
        try terminal.send("user1password", "Enter")
        try expectScreen(terminal, "status=0")
        #expect(try !terminal.screen().contains("user1password"))
    }
}
