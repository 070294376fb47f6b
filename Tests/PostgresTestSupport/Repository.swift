import Foundation

/// Paths in this repository, for tests that read its files (fixtures, migrations, sources), wherever the test
/// file that asks sits.
public enum Repository {
    /// The repository's root directory.
    public static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// `relative` (such as `"sql"` or `"Tests/StorageTests/Fixtures"`) under the root.
    public static func url(_ relative: String) -> URL {
        root.appendingPathComponent(relative)
    }
}
