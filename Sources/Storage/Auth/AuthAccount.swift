/// One Firebase Auth account as `firebase auth:export` writes it: `localId` is the uid the tree's nodes are keyed
/// by; every other field may be missing.
public struct AuthAccount: Sendable, Equatable {
    /// `localId`.
    public var uid: String
    /// `email`.
    public var email: String?
    /// `emailVerified`.
    public var emailVerified: Bool?
    /// `passwordHash`, base64 as exported (Firebase's modified scrypt for the project's `HashConfig`).
    public var passwordHash: String?
    /// `salt`, base64.
    public var salt: String?
    /// `displayName`.
    public var displayName: String?
    /// `photoUrl`.
    public var photoURL: String?
    /// `phoneNumber`.
    public var phoneNumber: String?
    /// `disabled`.
    public var disabled: Bool?
    /// `createdAt`, milliseconds since 1970 (exported as a string of digits).
    public var createdAt: Int64?
    /// `lastSignedInAt`, milliseconds since 1970.
    public var lastSignedInAt: Int64?
    /// `customAttributes`: the custom claims, a JSON object written as a string.
    public var customAttributes: String?
    /// `providerUserInfo`, in the file's order.
    public var providers: [AuthProvider] = []
    /// Members this version does not know, by name, as JSON text: kept and exported again.
    public var extra: [String: String] = [:]

    /// An account with only its uid.
    public init(uid: String) {
        self.uid = uid
    }
}

/// One entry of an account's `providerUserInfo`: how the user signs in with another identity provider.
public struct AuthProvider: Sendable, Equatable {
    /// `providerId`: `google.com`, `facebook.com`, `password`, `phone`…
    public var providerID: String
    /// `rawId`: the user's id at the provider.
    public var rawID: String?
    /// `email`.
    public var email: String?
    /// `displayName`.
    public var displayName: String?
    /// `photoUrl`.
    public var photoURL: String?
    /// `federatedId`.
    public var federatedID: String?
    /// Members this version does not know, by name, as JSON text.
    public var extra: [String: String] = [:]

    /// A provider entry with only its id.
    public init(providerID: String) {
        self.providerID = providerID
    }
}

/// The formats of `firebase auth:export`.
public enum AccountFileFormat: String, Sendable, CaseIterable {
    /// `{"users": [ … ]}`.
    case json
    /// One account per line, no header, the columns `auth:export --format=csv` writes.
    case csv

    /// The format a file's name says (`.csv`, `.csv.gz`), JSON otherwise, as `firebase auth:export` decides.
    public init(fileName: String) {
        let name = fileName.hasSuffix(".gz") ? String(fileName.dropLast(3)) : fileName
        self = name.lowercased().hasSuffix(".csv") ? .csv : .json
    }
}

/// The JSON member names of an account and of a provider entry, in the order `auth:export` writes them.
enum AccountField {
    static let uid = "localId"
    static let email = "email"
    static let emailVerified = "emailVerified"
    static let passwordHash = "passwordHash"
    static let salt = "salt"
    static let displayName = "displayName"
    static let photoURL = "photoUrl"
    static let lastSignedInAt = "lastSignedInAt"
    static let createdAt = "createdAt"
    static let phoneNumber = "phoneNumber"
    static let disabled = "disabled"
    static let customAttributes = "customAttributes"
    static let providers = "providerUserInfo"

    static let providerID = "providerId"
    static let rawID = "rawId"
    static let federatedID = "federatedId"
}

/// Firebase's uids are 1 to 128 characters.
let maximumUIDBytes = 128
