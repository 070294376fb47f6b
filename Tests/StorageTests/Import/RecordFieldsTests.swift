import FirebaseTree
import Testing

@testable import Storage

@Suite("A record's fields")
struct RecordFieldsTests {
    /// Set, replace and remove against a dictionary, below and past the count where positions get hashed,
    /// with keys that are canonically equivalent but not equal in bytes.
    @Test(arguments: [5, 16, 17, 300])
    func fieldListAgreesWithADictionary(count: Int) {
        var fields = FieldList()
        var model: [[UInt8]: TreeValue] = [:]
        func set(_ key: String, _ value: TreeValue?) {
            fields[key] = value
            model[Array(key.utf8)] = value
        }
        for index in 0..<count { set("k\(index)", .number(Double(index))) }
        set("e\u{301}", .string("decomposed"))
        set("é", .string("composed"))
        for index in stride(from: 0, to: count, by: 3) { set("k\(index)", .bool(true)) }
        for index in stride(from: 1, to: count, by: 4) { set("k\(index)", nil) }
        set("missing", nil)
        #expect(fields.remove("k2") == model.removeValue(forKey: Array("k2".utf8)))
        #expect(fields.remove("k\(count - 1)") == model.removeValue(forKey: Array("k\(count - 1)".utf8)))
        #expect(fields.remove("missing") == nil)
        #expect(fields.count == model.count)
        for (key, value) in model {
            #expect(fields[String(decoding: key, as: UTF8.self)] == value)
        }
        #expect(fields["e\u{301}"] == .string("decomposed"))
        #expect(fields["é"] == .string("composed"))
        #expect(fields.object.count == model.count)
    }
}
