import FirebaseTree

/// Reads and writes the files of `firebase auth:export` and `auth:import`, one account at a time, so that a file
/// of any size takes the memory of one account (at most `maximumAccountBytes`).
enum AccountFile {
    /// An account larger than this is rejected: Firebase's own are a few hundred bytes.
    static let maximumAccountBytes = 1 << 20

    /// Hands each account of `source` to `onAccount`, in file order, and each that cannot be stored to `onReject`;
    /// throws for a file that is not an export of that format at all.
    static func read(
        _ source: some ByteSource, format: AccountFileFormat, onAccount: (AuthAccount) throws -> Void,
        onReject: (ImportReject) throws -> Void
    ) throws {
        switch format {
        case .json: try readJSON(source, onAccount: onAccount, onReject: onReject)
        case .csv: try readCSV(source, onAccount: onAccount, onReject: onReject)
        }
    }

    // MARK: JSON

    private static func readJSON(
        _ source: some ByteSource, onAccount: (AuthAccount) throws -> Void, onReject: (ImportReject) throws -> Void
    ) throws {
        var reader = JSONReader(source: source)
        guard try reader.next() == .objectStart else {
            throw malformed("an auth:export file is a JSON object holding \"users\": [ … ]")
        }
        var sawUsers = false
        while let key = try reader.nextChild() {
            guard key == "users", !sawUsers else {
                throw malformed(
                    "unexpected member \"\(key.prefix(100))\" in an auth:export file, which holds \"users\" only")
            }
            sawUsers = true
            switch reader.token {
            case .arrayStart: break
            case .objectStart:
                throw malformed(
                    "\"users\" is an object, not auth:export's array of accounts: is this a database export? "
                        + "(import reads those)")
            default: throw malformed("\"users\" must be an array of accounts")
            }
            var index = 0
            while try reader.moveToNextChild() {
                defer { index += 1 }
                let path = "/users/\(index)"
                let isObject = reader.token == .objectStart
                let captured = try reader.captureValue(maximumBytes: maximumAccountBytes)
                guard isObject else {
                    try onReject(
                        ImportReject(path: path, reason: "an account must be a JSON object", value: captured.text))
                    continue
                }
                guard !captured.isTruncated else {
                    try onReject(
                        ImportReject(
                            path: path, reason: "an account over \(maximumAccountBytes >> 20) MB", value: captured.text,
                            isTruncated: true, valueBytes: captured.inputBytes))
                    continue
                }
                do {
                    try onAccount(try parseAccount(captured.text))
                } catch let reason as RejectReason {
                    try onReject(ImportReject(path: path, reason: reason.text, value: captured.text))
                }
            }
        }
        guard sawUsers else { throw malformed("no \"users\" array: not an auth:export file") }
        guard try reader.next() == .end else { throw malformed("unexpected data after the accounts") }
    }

    /// Why one account cannot be stored.
    struct RejectReason: Error {
        var text: String
    }

    /// An account from its JSON text (compact, as `captureValue` gives it).
    static func parseAccount(_ text: String) throws -> AuthAccount {
        var reader = JSONReader(source: MemorySource(text))
        try reader.next()
        var account = AuthAccount(uid: "")
        var hasUID = false
        while let key = try reader.nextChild() {
            switch key {
            case AccountField.uid:
                account.uid = try string(&reader, key) ?? ""
                hasUID = true
            case AccountField.email: account.email = try string(&reader, key)
            case AccountField.emailVerified: account.emailVerified = try boolean(&reader, key)
            case AccountField.passwordHash: account.passwordHash = try base64(&reader, key)
            case AccountField.salt: account.salt = try base64(&reader, key)
            case AccountField.displayName: account.displayName = try string(&reader, key)
            case AccountField.photoURL: account.photoURL = try string(&reader, key)
            case AccountField.phoneNumber: account.phoneNumber = try string(&reader, key)
            case AccountField.disabled: account.disabled = try boolean(&reader, key)
            case AccountField.createdAt: account.createdAt = try milliseconds(&reader, key)
            case AccountField.lastSignedInAt: account.lastSignedInAt = try milliseconds(&reader, key)
            case AccountField.customAttributes: account.customAttributes = try string(&reader, key)
            case AccountField.providers:
                if reader.token == .null { continue }
                guard reader.token == .arrayStart else { throw RejectReason(text: "providerUserInfo must be an array") }
                while try reader.moveToNextChild() {
                    let provider = try parseProvider(&reader)
                    guard !account.providers.contains(where: { $0.providerID == provider.providerID }) else {
                        throw RejectReason(text: "providerUserInfo names \(provider.providerID.prefix(100)) twice")
                    }
                    account.providers.append(provider)
                }
            default:
                account.extra[key] = try reader.captureValue(maximumBytes: maximumAccountBytes).text
            }
        }
        guard hasUID else { throw RejectReason(text: "an account needs a localId (its uid)") }
        try validate(uid: account.uid)
        return account
    }

    /// One `providerUserInfo` entry, the reader on its first token.
    static func parseProvider(_ reader: inout JSONReader) throws -> AuthProvider {
        guard reader.token == .objectStart else {
            throw RejectReason(text: "each providerUserInfo entry must be an object")
        }
        var provider = AuthProvider(providerID: "")
        while let key = try reader.nextChild() {
            switch key {
            case AccountField.providerID: provider.providerID = try string(&reader, key) ?? ""
            case AccountField.rawID: provider.rawID = try string(&reader, key)
            case AccountField.email: provider.email = try string(&reader, key)
            case AccountField.displayName: provider.displayName = try string(&reader, key)
            case AccountField.photoURL: provider.photoURL = try string(&reader, key)
            case AccountField.federatedID: provider.federatedID = try string(&reader, key)
            default: provider.extra[key] = try reader.captureValue(maximumBytes: maximumAccountBytes).text
            }
        }
        guard !provider.providerID.isEmpty else {
            throw RejectReason(text: "a providerUserInfo entry needs a providerId")
        }
        return provider
    }

    static func validate(uid: String) throws {
        guard !uid.isEmpty, uid.utf8.count <= maximumUIDBytes else {
            throw RejectReason(text: "a uid (localId) has 1 to \(maximumUIDBytes) characters")
        }
    }

    private static func string(_ reader: inout JSONReader, _ key: String) throws -> String? {
        switch reader.token {
        case .null: return nil
        case .string: return reader.string
        default:
            try reader.skipValue()
            throw RejectReason(text: "\(key) must be a string")
        }
    }

    private static func boolean(_ reader: inout JSONReader, _ key: String) throws -> Bool? {
        switch reader.token {
        case .null: return nil
        case .true: return true
        case .false: return false
        case .string where reader.string == "true": return true
        case .string where reader.string == "false": return false
        default:
            try reader.skipValue()
            throw RejectReason(text: "\(key) must be true or false")
        }
    }

    private static func base64(_ reader: inout JSONReader, _ key: String) throws -> String? {
        guard let text = try string(&reader, key) else { return nil }
        guard Base64.decode(text) != nil else { throw RejectReason(text: "\(key) is not base64") }
        return text
    }

    /// Milliseconds as `auth:export` writes them (a string of digits) or as a number.
    private static func milliseconds(_ reader: inout JSONReader, _ key: String) throws -> Int64? {
        switch reader.token {
        case .null: return nil
        case .string:
            if let value = Int64(reader.string), value >= 0 { return value }
        case .number:
            let value = reader.number
            if value >= 0, value < 9.2e18, value.rounded() == value { return Int64(value) }
        default:
            try reader.skipValue()
        }
        throw RejectReason(text: "\(key) must be milliseconds since 1970 (digits)")
    }

    private static func malformed(_ message: String) -> StorageError {
        StorageError(.malformedInput, message)
    }

    // MARK: CSV

    /// The providers `auth:export --format=csv` has columns for, and where their four columns start.
    static let csvProviders: [(id: String, column: Int)] = [
        ("google.com", 7), ("facebook.com", 11), ("twitter.com", 15), ("github.com", 19),
    ]

    /// Columns of a CSV account: 0 uid, 1 email, 2 emailVerified, 3 passwordHash, 4 salt, 5 displayName,
    /// 6 photoUrl, 7–22 the providers above (rawId, email, displayName, photoUrl each), 23 createdAt,
    /// 24 lastSignedInAt, 25 phoneNumber, 26 disabled, 27 customAttributes; Firebase ends each line with a comma.
    static let csvColumns = 28

    private static func readCSV(
        _ source: some ByteSource, onAccount: (AuthAccount) throws -> Void, onReject: (ImportReject) throws -> Void
    ) throws {
        var records = CSVRecords(source: source, maximumBytes: maximumAccountBytes)
        while let record = try records.next() {
            let path = "line \(record.line)"
            guard !record.isTooLong else {
                try onReject(
                    ImportReject(
                        path: path, reason: "an account over \(maximumAccountBytes >> 20) MB", value: record.text,
                        isTruncated: true))
                continue
            }
            if record.fields == [""] { continue }
            do {
                try onAccount(try account(csv: record.fields))
            } catch let reason as RejectReason {
                try onReject(ImportReject(path: path, reason: reason.text, value: record.text))
            }
        }
    }

    static func account(csv fields: [String]) throws -> AuthAccount {
        // A trailing comma gives one empty field more.
        guard fields.count == csvColumns || (fields.count == csvColumns + 1 && fields[csvColumns].isEmpty) else {
            throw RejectReason(text: "expected \(csvColumns) columns, as auth:export writes, not \(fields.count)")
        }
        func text(_ column: Int) -> String? { fields[column].isEmpty ? nil : fields[column] }
        func flag(_ column: Int, _ name: String) throws -> Bool? {
            switch fields[column] {
            case "": return nil
            case "true": return true
            case "false": return false
            default: throw RejectReason(text: "\(name) must be true or false")
            }
        }
        func milliseconds(_ column: Int, _ name: String) throws -> Int64? {
            guard let text = text(column) else { return nil }
            guard let value = Int64(text), value >= 0 else {
                throw RejectReason(text: "\(name) must be milliseconds since 1970 (digits)")
            }
            return value
        }
        func base64(_ column: Int, _ name: String) throws -> String? {
            guard let text = text(column) else { return nil }
            guard Base64.decode(text) != nil else { throw RejectReason(text: "\(name) is not base64") }
            return text
        }
        try validate(uid: fields[0])
        var account = AuthAccount(uid: fields[0])
        account.email = text(1)
        account.emailVerified = try flag(2, "emailVerified")
        account.passwordHash = try base64(3, "passwordHash")
        account.salt = try base64(4, "salt")
        account.displayName = text(5)
        account.photoURL = text(6)
        for (id, column) in csvProviders where text(column) != nil {
            var provider = AuthProvider(providerID: id)
            provider.rawID = text(column)
            provider.email = text(column + 1)
            provider.displayName = text(column + 2)
            provider.photoURL = text(column + 3)
            account.providers.append(provider)
        }
        account.createdAt = try milliseconds(23, "createdAt")
        account.lastSignedInAt = try milliseconds(24, "lastSignedInAt")
        account.phoneNumber = text(25)
        account.disabled = try flag(26, "disabled")
        account.customAttributes = text(27)
        return account
    }

    // MARK: Writing

    /// The account as one JSON object, members in `auth:export`'s order, unknown ones after.
    static func json(_ account: AuthAccount) -> [UInt8] {
        var object = JSONObjectText()
        object.add(AccountField.uid, string: account.uid)
        object.add(AccountField.email, string: account.email)
        object.add(AccountField.emailVerified, bool: account.emailVerified)
        object.add(AccountField.passwordHash, string: account.passwordHash)
        object.add(AccountField.salt, string: account.salt)
        object.add(AccountField.displayName, string: account.displayName)
        object.add(AccountField.photoURL, string: account.photoURL)
        object.add(AccountField.lastSignedInAt, string: account.lastSignedInAt.map(String.init))
        object.add(AccountField.createdAt, string: account.createdAt.map(String.init))
        object.add(AccountField.phoneNumber, string: account.phoneNumber)
        object.add(AccountField.disabled, bool: account.disabled)
        object.add(AccountField.customAttributes, string: account.customAttributes)
        if !account.providers.isEmpty {
            var list: [UInt8] = [UInt8(ascii: "[")]
            for (index, provider) in account.providers.enumerated() {
                if index > 0 { list.append(UInt8(ascii: ",")) }
                list += json(provider)
            }
            list.append(UInt8(ascii: "]"))
            object.add(AccountField.providers, json: list)
        }
        object.add(extra: account.extra)
        return object.finished()
    }

    /// A provider entry as one JSON object.
    static func json(_ provider: AuthProvider) -> [UInt8] {
        var object = JSONObjectText()
        object.add(AccountField.providerID, string: provider.providerID)
        object.add(AccountField.rawID, string: provider.rawID)
        object.add(AccountField.email, string: provider.email)
        object.add(AccountField.displayName, string: provider.displayName)
        object.add(AccountField.photoURL, string: provider.photoURL)
        object.add(AccountField.federatedID, string: provider.federatedID)
        object.add(extra: provider.extra)
        return object.finished()
    }

    /// Unknown members as one JSON object (`{}` for none).
    static func json(extra: [String: String]) -> String {
        var object = JSONObjectText()
        object.add(extra: extra)
        return String(decoding: object.finished(), as: UTF8.self)
    }

    /// The members of a JSON object's text (`jsonb`'s output), each as JSON text.
    static func members(ofObject text: String) throws -> [String: String] {
        var reader = JSONReader(source: MemorySource(text))
        guard try reader.next() == .objectStart else { return [:] }
        var members: [String: String] = [:]
        while let key = try reader.nextChild() {
            members[key] = try reader.captureValue(maximumBytes: .max).text
        }
        return members
    }

    /// The account as one CSV line as `auth:export --format=csv` writes it (fields quoted as RFC 4180 does where
    /// they need it, where Firebase only wraps a comma in quotes). Providers without a column are left out, as
    /// there.
    static func csv(_ account: AuthAccount) -> [UInt8] {
        var fields = [String](repeating: "", count: csvColumns)
        fields[0] = account.uid
        fields[1] = account.email ?? ""
        fields[2] = account.emailVerified.map(String.init) ?? "false"
        fields[3] = account.passwordHash ?? ""
        fields[4] = account.salt ?? ""
        fields[5] = account.displayName ?? ""
        fields[6] = account.photoURL ?? ""
        for (id, column) in csvProviders {
            guard let provider = account.providers.first(where: { $0.providerID == id }) else { continue }
            fields[column] = provider.rawID ?? ""
            fields[column + 1] = provider.email ?? ""
            fields[column + 2] = provider.displayName ?? ""
            fields[column + 3] = provider.photoURL ?? ""
        }
        fields[23] = account.createdAt.map(String.init) ?? ""
        fields[24] = account.lastSignedInAt.map(String.init) ?? ""
        fields[25] = account.phoneNumber ?? ""
        fields[26] = account.disabled.map(String.init) ?? ""
        fields[27] = account.customAttributes ?? ""
        var line: [UInt8] = []
        for field in fields {
            if field.utf8.contains(where: {
                $0 == UInt8(ascii: ",") || $0 == UInt8(ascii: "\"") || $0 == 10 || $0 == 13
            }) {
                line.append(UInt8(ascii: "\""))
                for byte in field.utf8 {
                    if byte == UInt8(ascii: "\"") { line.append(byte) }
                    line.append(byte)
                }
                line.append(UInt8(ascii: "\""))
            } else {
                line += field.utf8
            }
            line.append(UInt8(ascii: ","))
        }
        line.append(UInt8(ascii: "\n"))
        return line
    }
}

/// A JSON object's text, member by member; members whose value is nil are left out.
struct JSONObjectText {
    private var bytes: [UInt8] = [UInt8(ascii: "{")]

    private mutating func key(_ name: String) {
        if bytes.count > 1 { bytes.append(UInt8(ascii: ",")) }
        var name = name
        name.withUTF8 { JSONTextWriter.appendQuoted($0, to: &bytes) }
        bytes.append(UInt8(ascii: ":"))
    }

    mutating func add(_ name: String, string value: String?) {
        guard var value else { return }
        key(name)
        value.withUTF8 { JSONTextWriter.appendQuoted($0, to: &bytes) }
    }

    mutating func add(_ name: String, bool value: Bool?) {
        guard let value else { return }
        key(name)
        bytes += (value ? "true" : "false").utf8
    }

    mutating func add(_ name: String, json value: [UInt8]) {
        key(name)
        bytes += value
    }

    /// Unknown members, in byte order of their names so that the same account gives the same bytes.
    mutating func add(extra: [String: String]) {
        for name in extra.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }) {
            if let value = extra[name] { add(name, json: Array(value.utf8)) }
        }
    }

    func finished() -> [UInt8] {
        bytes + [UInt8(ascii: "}")]
    }
}

/// The records of a CSV file read in chunks: fields split at commas, quoted fields with `""` for a quote and
/// line breaks inside; a quote that does not end a field is kept, as Firebase writes some unescaped.
struct CSVRecords {
    /// One line's fields.
    struct Record {
        var fields: [String]
        /// Where it starts, from 1.
        var line: Int
        /// The record's text (its first `maximumBytes` when too long).
        var text: String
        /// Whether it was longer than `maximumBytes` (its fields are then empty).
        var isTooLong: Bool
    }

    private var input: ByteCursor
    private let maximumBytes: Int
    private var line = 1

    init(source: some ByteSource, maximumBytes: Int) {
        input = ByteCursor(source)
        self.maximumBytes = maximumBytes
    }

    /// The next record, nil at the end of the file.
    mutating func next() throws -> Record? {
        var fields: [String] = []
        var field: [UInt8] = []
        var text: [UInt8] = []
        var isQuoted = false
        var isTooLong = false
        let firstLine = line
        guard var byte = try input.next() else { return nil }
        if firstLine == 1, byte == 0xEF {
            // A byte-order mark.
            _ = try input.next()
            _ = try input.next()
            guard let after = try input.next() else { return nil }
            byte = after
        }
        while true {
            if text.count < maximumBytes { text.append(byte) } else { isTooLong = true }
            if byte == 10 { line += 1 }
            if isQuoted {
                if byte == UInt8(ascii: "\"") {
                    // `""` is a quote; a quote before a comma or line end closes the field; any other is kept.
                    let following = try input.next()
                    if following == UInt8(ascii: "\"") {
                        field.append(byte)
                        if text.count < maximumBytes { text.append(byte) }
                    } else if following == nil || following == UInt8(ascii: ",") || following == 10
                        || following == 13
                    {
                        isQuoted = false
                        if following != nil { input.unread() }
                    } else {
                        field.append(byte)
                        input.unread()
                    }
                } else if !isTooLong {
                    field.append(byte)
                }
            } else {
                switch byte {
                case UInt8(ascii: ","):
                    fields.append(String(decoding: field, as: UTF8.self))
                    field.removeAll(keepingCapacity: true)
                case UInt8(ascii: "\"") where field.isEmpty:
                    isQuoted = true
                case 13:
                    break
                case 10:
                    fields.append(String(decoding: field, as: UTF8.self))
                    return record(fields, firstLine, text, isTooLong)
                default:
                    if !isTooLong { field.append(byte) }
                }
            }
            guard let following = try input.next() else {
                fields.append(String(decoding: field, as: UTF8.self))
                return record(fields, firstLine, text, isTooLong)
            }
            byte = following
        }
    }

    private func record(_ fields: [String], _ line: Int, _ text: [UInt8], _ isTooLong: Bool) -> Record {
        var end = text.count
        while end > 0, text[end - 1] == 10 || text[end - 1] == 13 { end -= 1 }
        return Record(
            fields: isTooLong ? [] : fields, line: line, text: String(decoding: text[..<end], as: UTF8.self),
            isTooLong: isTooLong)
    }
}
