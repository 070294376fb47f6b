internal import CCrypto
import Foundation

/// scrypt (RFC 7914), through OpenSSL's libcrypto.
public enum Scrypt {
    /// The most memory one derivation may take: Firebase's own parameters (mem_cost 14, rounds 8) need 16 MB.
    public static let maximumMemory = 256 << 20

    /// The `length`-byte key scrypt derives from `password` and `salt` with cost `n` (a power of two), block size
    /// `r` and parallelism `p`. Throws for parameters OpenSSL refuses or that need more than `maximumMemory`.
    public static func derive(
        password: [UInt8], salt: [UInt8], n: UInt64, r: UInt64, p: UInt64, length: Int
    ) throws -> [UInt8] {
        // scrypt's own working memory is 128·r·N·p bytes (V and B); a little more for OpenSSL's bookkeeping.
        let (needed, overflow) = (128 * r).multipliedReportingOverflow(by: n)
        guard !overflow, needed <= UInt64(maximumMemory), p >= 1, r >= 1, n >= 2, n & (n - 1) == 0 else {
            throw StorageError(
                .refused, "scrypt parameters N=\(n), r=\(r), p=\(p) are not valid here",
                hint: "N must be a power of two and 128·r·N at most \(maximumMemory >> 20) MB.")
        }
        var key = [UInt8](repeating: 0, count: length)
        let result = password.withUnsafeBufferPointer { password in
            salt.withUnsafeBufferPointer { salt in
                key.withUnsafeMutableBufferPointer { key in
                    password.withMemoryRebound(to: CChar.self) { password in
                        EVP_PBE_scrypt(
                            password.baseAddress, password.count, salt.baseAddress, salt.count, n, r, p,
                            needed * p + (1 << 20), key.baseAddress, key.count)
                    }
                }
            }
        }
        guard result == 1 else { throw StorageError(.refused, "scrypt failed (N=\(n), r=\(r), p=\(p))") }
        return key
    }
}

/// A project's password hash parameters, as the Firebase console shows them (Authentication, Users, the three-dot menu, "Password
/// hash parameters"):
///
/// ```
/// hash_config {
///   algorithm: SCRYPT,
///   base64_signer_key: jxspr8Ki0RYycVU8zykbdLGjFQ3McFUH0uiiTvC8pVMXAn210wjLNmdZJzxUECKbm0QsEmYUSDzZvpjeJ9WmXA==,
///   base64_salt_separator: Bw==,
///   rounds: 8,
///   mem_cost: 14,
/// }
/// ```
public struct HashConfig: Sendable, Equatable {
    /// `SCRYPT` for Firebase's own hashes; anything else is kept but cannot be verified here.
    public var algorithm: String
    /// The signer key, base64 as the console shows it. A secret: never printed.
    public var signerKey: String?
    /// The salt separator, base64.
    public var saltSeparator: String?
    /// scrypt's r.
    public var rounds: Int?
    /// scrypt's N is 2^memCost.
    public var memoryCost: Int?

    /// Parameters given one by one.
    public init(
        algorithm: String, signerKey: String?, saltSeparator: String?, rounds: Int?, memoryCost: Int?
    ) {
        self.algorithm = algorithm
        self.signerKey = signerKey
        self.saltSeparator = saltSeparator
        self.rounds = rounds
        self.memoryCost = memoryCost
    }

    /// Reads the block the console shows, as pasted: `key: value` pairs separated by commas or lines, inside
    /// `hash_config { … }` or not. Throws for an unknown name, a malformed value, or SCRYPT without its
    /// parameters.
    public init(parsing text: String) throws {
        var body = Substring(text).trimmingCharacters(in: .whitespacesAndNewlines)[...]
        if body.hasPrefix("hash_config") {
            body = body.dropFirst("hash_config".count).drop { $0.isWhitespace }
            guard body.first == "{", body.last == "}" else {
                throw StorageError(.refused, "hash parameters: expected hash_config { … }")
            }
            body = body.dropFirst().dropLast()
        }
        var values: [String: String] = [:]
        for item in body.split(whereSeparator: { $0 == "," || $0 == "\n" }) {
            let pair = item.trimmingCharacters(in: .whitespaces)
            if pair.isEmpty { continue }
            guard let colon = pair.firstIndex(of: ":") else {
                throw StorageError(.refused, "hash parameters: expected name: value, not \"\(pair.prefix(40))\"")
            }
            let name = pair[..<colon].trimmingCharacters(in: .whitespaces)
            var value = pair[pair.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") {
                value = String(value.dropFirst().dropLast())
            }
            guard Self.names.contains(name) else {
                throw StorageError(
                    .refused, "hash parameters: unknown name \"\(name.prefix(40))\"",
                    hint: "The console's block names " + Self.names.sorted().joined(separator: ", ") + ".")
            }
            values[name] = value
        }
        guard let algorithm = values["algorithm"], !algorithm.isEmpty else {
            throw StorageError(.refused, "hash parameters: no algorithm")
        }
        func integer(_ name: String) throws -> Int? {
            guard let text = values[name] else { return nil }
            guard let value = Int(text) else {
                throw StorageError(.refused, "hash parameters: \(name) must be an integer, not \"\(text.prefix(40))\"")
            }
            return value
        }
        self.init(
            algorithm: algorithm, signerKey: values["base64_signer_key"],
            saltSeparator: values["base64_salt_separator"], rounds: try integer("rounds"),
            memoryCost: try integer("mem_cost"))
        try validate()
    }

    private static let names: Set<String> = [
        "algorithm", "base64_signer_key", "base64_salt_separator", "rounds", "mem_cost",
    ]

    /// Whether hashes made with these parameters can be checked here.
    public var isVerifiable: Bool { algorithm == "SCRYPT" }

    /// Throws when SCRYPT lacks a parameter or has one out of Firebase's range.
    func validate() throws {
        guard isVerifiable else { return }
        guard let signerKey, Base64.decode(signerKey) != nil else {
            throw StorageError(.refused, "hash parameters: SCRYPT needs base64_signer_key, in base64")
        }
        guard Base64.decode(saltSeparator ?? "") != nil else {
            throw StorageError(.refused, "hash parameters: base64_salt_separator is not base64")
        }
        guard let rounds, (1...8).contains(rounds) else {
            throw StorageError(.refused, "hash parameters: SCRYPT needs rounds from 1 to 8")
        }
        guard let memoryCost, (1...14).contains(memoryCost) else {
            throw StorageError(.refused, "hash parameters: SCRYPT needs mem_cost from 1 to 14")
        }
    }

    /// Firebase's modified scrypt: the key scrypt derives from the password and salt ‖ separator (N = 2^mem_cost,
    /// r = rounds, p = 1, 32 bytes) encrypts the signer key with AES-256-CTR and a zero IV; that is the hash.
    public func hash(password: [UInt8], salt: [UInt8]) throws -> [UInt8] {
        try validate()
        guard let signerKey = signerKey.flatMap(Base64.decode), let rounds, let memoryCost else {
            throw StorageError(.refused, "hash parameters: \(algorithm) hashes cannot be computed here")
        }
        let separator = Base64.decode(saltSeparator ?? "") ?? []
        let key = try Scrypt.derive(
            password: password, salt: salt + separator, n: 1 << UInt64(memoryCost), r: UInt64(rounds), p: 1,
            length: 32)
        return try AES256CTR.encrypt(signerKey, key: key)
    }
}

/// AES-256 in counter mode with a zero IV, through libcrypto.
enum AES256CTR {
    static func encrypt(_ plaintext: [UInt8], key: [UInt8]) throws -> [UInt8] {
        precondition(key.count == 32, "AES-256 takes a 32-byte key")
        guard let context = EVP_CIPHER_CTX_new() else { throw StorageError(.refused, "AES: out of memory") }
        defer { EVP_CIPHER_CTX_free(context) }
        let iv = [UInt8](repeating: 0, count: 16)
        var output = [UInt8](repeating: 0, count: plaintext.count + 16)
        var written: Int32 = 0
        var final: Int32 = 0
        let isDone =
            EVP_EncryptInit_ex(context, EVP_aes_256_ctr(), nil, key, iv) == 1
            && output.withUnsafeMutableBufferPointer { output in
                EVP_EncryptUpdate(context, output.baseAddress, &written, plaintext, Int32(plaintext.count)) == 1
                    && EVP_EncryptFinal_ex(context, output.baseAddress.map { $0 + Int(written) }, &final) == 1
            }
        guard isDone else { throw StorageError(.refused, "AES-256-CTR failed") }
        return Array(output.prefix(Int(written + final)))
    }
}

/// Equality of two byte strings in time that depends on their length only, so that how long a comparison of
/// hashes takes says nothing of where they differ.
func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
    guard a.count == b.count else { return false }
    if a.isEmpty { return true }
    return a.withUnsafeBytes { a in b.withUnsafeBytes { b in CRYPTO_memcmp(a.baseAddress, b.baseAddress, a.count) == 0 }
    }
}

/// Base64 as Firebase writes it: the standard alphabet with padding; the URL-safe alphabet and missing padding,
/// which other tools write, are read too.
public enum Base64 {
    /// The bytes `text` encodes, or nil when it is not base64.
    public static func decode(_ text: String) -> [UInt8]? {
        var standard = String(text.map { $0 == "-" ? "+" : $0 == "_" ? "/" : $0 })
        let remainder = standard.utf8.count % 4
        if remainder == 1 { return nil }
        if remainder > 0 { standard += String(repeating: "=", count: 4 - remainder) }
        return Data(base64Encoded: standard).map(Array.init)
    }

    /// Standard base64 with padding.
    public static func encode(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString()
    }
}
