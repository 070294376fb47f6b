import ArgumentParser

/// Firebase keys as positional arguments. Push IDs begin with "-" (`-NxQ3bH0Jb2Sc5HWq5nQ`), which the argument
/// parser reads as options, so commands taking keys collect every unrecognized word and check the count here.
enum PositionalKeys {
    /// Fails unless exactly `names.count` keys were given, naming them in the message.
    static func validate(_ keys: [String], names: [String]) throws {
        guard keys.count == names.count else {
            let expected = names.joined(separator: " ")
            if keys.count < names.count {
                throw ValidationError("missing \(names[keys.count...].joined(separator: " ")) (expected \(expected))")
            }
            throw ValidationError("unexpected \(keys[names.count...].joined(separator: " ")) (expected \(expected))")
        }
    }
}
