import Foundation
import PostgresClient
import Storage

/// `auth`: `admin auth import` of `accounts` Firebase Auth accounts (as `firebase auth:export` writes them: email,
/// password hash and salt, providers, timestamps) beside `psql \copy` of the same accounts' rows into a table with
/// a primary key only; the same file again (nothing changed), a merge with 1 % of the accounts changed, the export,
/// and `auth verify` of one password (one scrypt at Firebase's parameters, mem_cost 14 and rounds 8). Each row:
/// wall seconds (median of `runs`), the ratio to its yardstick, the process's peak RSS.
struct AuthBenchmark {
    let accounts: Int
    let runs: Int
    let work: String

    /// The account `u0` has firebase/scrypt's published hash of `user1password`; the others random bytes, since
    /// nothing is hashed on import.
    private func writeFiles() throws {
        var generator = SystemRandomNumberGenerator()
        func randomBase64(_ count: Int) -> String {
            Base64.encode((0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) })
        }
        for (name, changedEvery) in [("users.json", 0), ("changed.json", 100)] {
            var json = "{\"users\": [\n"
            var rows = ""
            for index in 0..<accounts {
                let isChanged = changedEvery > 0 && index % changedEvery == 50
                let email = "user\(index)@\(isChanged ? "changed" : "example").com"
                let hash =
                    index == 0
                    ? "lSrfV15cpx95/sZS2W9c9Kp6i/LVgQNDNC/qzrCnh1SAyZvqmZqAjTdn3aoItz+VHjoZilo78198JAdRuid5lQ=="
                    : randomBase64(64)
                let salt = index == 0 ? "42xEC+ixf3L2lw==" : randomBase64(10)
                let created = 1_500_000_000_000 + index * 60_000
                json +=
                    (index > 0 ? ",\n" : "")
                        + """
                        {"localId": "u\(index)", "email": "\(email)", "emailVerified": \(index % 3 == 0), \
                        "passwordHash": "\(hash)", "salt": "\(salt)", "displayName": "User \(index)", \
                        "lastSignedInAt": "\(created + 86_400_000)", "createdAt": "\(created)", \
                        "providerUserInfo": [{"providerId": "password", "rawId": "\(email)", "email": "\(email)"}]}
                        """
                rows +=
                    "u\(index)\t\(email)\t\(index % 3 == 0)\tUser \(index)\t\(created + 86_400_000)\t\(created)\t"
                    + "\(hash)\t\(salt)\t[{\"providerId\": \"password\", \"rawId\": \"\(email)\"}]\n"
            }
            try (json + "\n]}\n").write(toFile: work + "/" + name, atomically: true, encoding: .utf8)
            if changedEvery == 0 { try rows.write(toFile: work + "/rows.tsv", atomically: true, encoding: .utf8) }
        }
        // The sample's parameters: firebase/scrypt's published vector, whose hash of user1password u0 has.
        let sample = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("exports/sample-auth-hash-config.txt")
        try FileManager.default.copyItem(at: sample, to: URL(fileURLWithPath: work + "/hash-config.txt"))
        try "user1password\n".write(toFile: work + "/password.txt", atomically: true, encoding: .utf8)
    }

    func run() throws {
        try? FileManager.default.removeItem(atPath: work)
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        let (cluster, parameters, conninfo) = try openBenchmarkServer(work: work + "/server")
        defer { cluster.close() }
        let admin = adminBinary()
        let psql = try cluster.binaries().directory + "/psql"
        let environment = libpqEnvironment(parameters)
        _ = try spawn(admin, ["--db", conninfo, "-q", "migrate"])
        try writeFiles()
        let db = ["--db", conninfo, "-q"]
        let emptyAccounts = "TRUNCATE auth_accounts, auth_providers, auth_secrets.password_hashes"
        let yardstickTable = """
            DROP TABLE IF EXISTS bench_accounts;
            CREATE TABLE bench_accounts (uid text PRIMARY KEY, email text, email_verified boolean, display_name text,
                last_signed_in_at bigint, created_at bigint, password_hash text, salt text, providers jsonb)
            """
        var rows: [String: [Measurement]] = [:]
        for _ in 0..<runs {
            _ = try spawn(psql, ["-q", "-c", emptyAccounts], environment: environment)
            try quiesce(conninfo)
            rows["import", default: []].append(
                try spawn(
                    admin, db + ["auth", "import", work + "/users.json", "--hash-config", work + "/hash-config.txt"]))
            _ = try spawn(psql, ["-q", "-c", yardstickTable], environment: environment)
            try quiesce(conninfo)
            rows["psql \\copy", default: []].append(
                try spawn(
                    psql, ["-q", "-c", "\\copy bench_accounts FROM '\(work)/rows.tsv'"], environment: environment))
            try quiesce(conninfo)
            rows["import again, nothing changed", default: []].append(
                try spawn(admin, db + ["auth", "import", work + "/users.json"]))
            rows["merge, 1 % changed", default: []].append(
                try spawn(admin, db + ["auth", "import", work + "/changed.json", "--mode", "merge", "--dry-run"]))
            rows["export", default: []].append(
                try spawn(admin, db + ["auth", "export", work + "/export.json", "--force"]))
            rows["verify one password", default: []].append(
                try spawn(admin, db + ["auth", "verify", "u0"], stdin: work + "/password.txt"))
        }
        print(
            "accounts: \(accounts), \(format(Double(fileSize(work + "/users.json")) / 1_000_000)) MB of JSON; "
                + "\(runs) runs each, the median")
        print("| work | seconds | ratio | yardstick | peak RSS MB |")
        print("|---|---|---|---|---|")
        func seconds(_ name: String) -> Double { median(rows[name]!.map(\.seconds)) }
        for (name, yardstick) in [
            ("import", "psql \\copy"), ("psql \\copy", nil), ("import again, nothing changed", "import"),
            ("merge, 1 % changed", "import"), ("export", nil), ("verify one password", nil),
        ] as [(String, String?)] {
            let ratio = yardstick.map { String(format: "%.2f×", seconds(name) / seconds($0)) } ?? ""
            print(
                "| \(name) | \(String(format: "%.3f", seconds(name))) | \(ratio) | \(yardstick ?? "") "
                    + "| \(format(rows[name]!.map(\.peakMB).max()!)) |")
        }
    }
}
