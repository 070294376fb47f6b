import Foundation
import PostgresTestSupport
import Testing

@testable import Storage

/// scrypt and Firebase's modified scrypt against published vectors; the parameters block as the console shows it.
struct PasswordHashingTests {
    private static func hex(_ bytes: [UInt8]) -> String {
        bytes.map { String(format: "%02x", $0) }.joined()
    }

    /// RFC 7914 section 12 (the fourth vector, N = 2^20, takes 1 GB and is left out).
    @Test(arguments: [
        (
            "", "", UInt64(16), UInt64(1), UInt64(1),
            "77d6576238657b203b19ca42c18a0497f16b4844e3074ae8dfdffa3fede21442fcd0069ded0948f8326a753a0fc81f17e8d3e0fb2e0d3628cf35e20c38d18906"
        ),
        (
            "password", "NaCl", 1024, 8, 16,
            "fdbabe1c9d3472007856e7190d01e9fe7c6ad7cbc8237830e77376634b3731622eaf30d92e22a3886ff109279d9830dac727afb94a83ee6d8360cbdfa2cc0640"
        ),
        (
            "pleaseletmein", "SodiumChloride", 16384, 8, 1,
            "7023bdcb3afd7348461c06cd81fd38ebfda8fbba904f8e3ea9b543f6545da1f2d5432955613f0fcf62d49705242a9af9e61e85dc0d651e40dfcf017b45575887"
        ),
    ])
    func scryptMatchesRFC7914(password: String, salt: String, n: UInt64, r: UInt64, p: UInt64, expected: String) throws
    {
        let key = try Scrypt.derive(
            password: Array(password.utf8), salt: Array(salt.utf8), n: n, r: r, p: p, length: 64)
        #expect(Self.hex(key) == expected)
    }

    @Test func scryptRefusesParametersOverItsMemoryBound() {
        #expect(throws: StorageError.self) {
            try Scrypt.derive(password: [1], salt: [2], n: 1 << 20, r: 8, p: 1, length: 32)
        }
        #expect(throws: StorageError.self) {
            try Scrypt.derive(password: [1], salt: [2], n: 1000, r: 8, p: 1, length: 32)
        }
    }

    /// The parameters of firebase/scrypt's published vector, as the console shows such a block: the sample file.
    static var firebaseConfig: String {
        get throws { try String(contentsOf: Repository.url("exports/sample-auth-hash-config.txt"), encoding: .utf8) }
    }

    /// The vector of firebase/scrypt's README.
    @Test func firebaseScryptMatchesFirebasesVector() throws {
        let config = try HashConfig(parsing: try Self.firebaseConfig)
        let hash = try config.hash(
            password: Array("user1password".utf8), salt: try #require(Base64.decode("42xEC+ixf3L2lw==")))
        #expect(
            Base64.encode(hash)
                == "lSrfV15cpx95/sZS2W9c9Kp6i/LVgQNDNC/qzrCnh1SAyZvqmZqAjTdn3aoItz+VHjoZilo78198JAdRuid5lQ==")
    }

    @Test func theParametersBlockReadsAsPastedWithOrWithoutItsWrapper() throws {
        let wrapped = try HashConfig(parsing: try Self.firebaseConfig)
        #expect(wrapped.algorithm == "SCRYPT" && wrapped.rounds == 8 && wrapped.memoryCost == 14)
        #expect(wrapped.saltSeparator == "Bw==")
        let bare = try HashConfig(
            parsing: """
                algorithm: SCRYPT
                base64_signer_key: "\(try #require(wrapped.signerKey))"
                base64_salt_separator: Bw==
                rounds: 8
                mem_cost: 14
                """)
        #expect(bare == wrapped)
        // Another project's algorithm is kept, not verifiable.
        let other = try HashConfig(parsing: "hash_config { algorithm: HMAC_SHA256, base64_signer_key: c2VjcmV0, }")
        #expect(!other.isVerifiable)
    }

    @Test(arguments: [
        "hash_config { algorithm: SCRYPT, rounds: 8, mem_cost: 14 }",  // no signer key
        "hash_config { algorithm: SCRYPT, base64_signer_key: a2V5, rounds: 9, mem_cost: 14 }",  // rounds out of range
        "hash_config { algorithm: SCRYPT, base64_signer_key: a2V5, rounds: 8, mem_cost: fourteen }",
        "hash_config { algorithm: SCRYPT, base64_signer_key: a2V5, rounds: 8, mem_cost: 14, memcost: 14 }",  // a typo
        "hash_config { base64_signer_key: a2V5 }",  // no algorithm
        "hash_config { algorithm: SCRYPT, base64_signer_key: a2V5, rounds: 8, mem_cost: 14",  // unclosed
        "hash_config { algorithm SCRYPT }",
    ])
    func malformedParametersAreRefused(_ text: String) {
        #expect(throws: StorageError.self) { try HashConfig(parsing: text) }
    }

    @Test func base64ReadsTheURLSafeAlphabetAndMissingPadding() throws {
        #expect(Base64.decode("-_8") == [0xFB, 0xFF])
        #expect(Base64.decode("+/8=") == [0xFB, 0xFF])
        #expect(Base64.decode("a") == nil)
        #expect(Base64.decode("not base64!") == nil)
        #expect(constantTimeEqual([1, 2, 3], [1, 2, 3]))
        #expect(!constantTimeEqual([1, 2, 3], [1, 2, 4]))
        #expect(!constantTimeEqual([1, 2, 3], [1, 2]))
    }
}
