import FirebaseTree

/// Reading an export without a database: every check and mapping `import` makes, with the rows encoded and
/// dropped. For validating a file before a migration, and for fuzzing the import.
public enum ImportMapping {
    /// Reads `source` as `Store.importTree` would and returns what it would load (rows per node and table,
    /// rejects, warnings); throws what the import would throw.
    ///
    /// ```swift
    /// let report = try ImportMapping.validate(MemorySource(bytes), options: ImportOptions(maximumRejects: 100))
    /// ```
    public static func validate(
        _ source: some ByteSource, options: ImportOptions = ImportOptions(),
        onReject: @escaping (ImportReject) throws -> Void = { _ in }
    ) throws -> ImportReport {
        try TreeLoad(source, options: options, on: nil, likes: .direct, findings: .ignored, onReject: onReject).run()
    }

    /// For `/posts/{id}`, whose children tell whether import stores it as one record (an AppCoda feed post), the
    /// rule, as `sync` asks it (`TreeComparison.Rewrites.recordRule`); nil for any other path.
    public static func recordRule(at path: [String]) -> ((String, Bool) -> Bool)? {
        TreeImporter.recordRule(at: path)
    }

    /// Whether import stores every object at `path` as one record, whatever its children.
    public static func storesRecord(at path: [String]) -> Bool {
        TreeImporter.storesRecord(at: path)
    }
}
