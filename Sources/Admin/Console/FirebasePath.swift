import ArgumentParser
import Storage

/// Firebase paths as the console takes them: `/posts/UID`, `posts/UID/`, `/` for the root.
enum FirebasePath {
    /// The keys of `text`, from the root; fails on a key Firebase would refuse.
    static func keys(of text: String) throws -> [String] {
        let keys = FirebaseKey.keys(ofPath: text)
        for key in keys {
            if let problem = FirebaseKey.problem(with: key) {
                throw ValidationError("\"\(key)\" in \(text) cannot be a Firebase key: \(problem)")
            }
        }
        return keys
    }

    /// The path of `keys` as the console writes it: `/posts/UID`, `/` for the root.
    static func string(of keys: [String]) -> String {
        "/" + keys.joined(separator: "/")
    }
}
