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
        let loader = TableLoader(connection: nil, usesFreeze: false)
        let importer = TreeImporter(
            source: source, loader: loader, options: options, onFinding: { _ in [:] }, onReject: onReject)
        try importer.load()
        return importer.report
    }

    /// Whether import stores the object at `path`, whose first child is `firstKey` (an object when
    /// `firstIsObject`), as one record: what `sync` rewrites whole when it differs.
    public static func storesRecord(at path: [String], firstKey: String, firstIsObject: Bool) -> Bool {
        TreeImporter.storesRecord(at: path, firstKey: firstKey, firstIsObject: firstIsObject)
    }

    /// Whether import stores every object at `path` as one record, whatever its children.
    public static func storesRecord(at path: [String]) -> Bool {
        TreeImporter.storesRecord(at: path)
    }
}
