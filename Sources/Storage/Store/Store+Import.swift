import Foundation

extension Store {
    /// Imports a Firebase JSON export in one transaction: with `.replace` the store becomes equal to the file;
    /// with `.merge`, as Firebase's `update` at the root, each top-level node of the file replaces the store's
    /// node of that name and the others stay.
    /// Nothing is changed when it throws, or with `isDryRun`.
    ///
    /// ```swift
    /// let report = try store.importTree(from: FileDescriptorSource(descriptor: fd, name: "backup.json"))
    /// ```
    /// `onReject` sees each rejected value as it is met (to write a rejects file); the import aborts once more
    /// than `options.maximumRejects` were rejected. A failure carries how far the import got in its context.
    /// `onRows` hears the number of rows mapped so far, every few thousand rows. `isCancelled`, asked as often, stops
    /// the import (rolled back, as a cancelled statement): during COPY the server's answer to a cancel request is
    /// only read at the end, so the reading must stop by itself.
    public func importTree(
        from source: some ByteSource, options: ImportOptions = ImportOptions(),
        onReject: @escaping (ImportReject) throws -> Void = { _ in },
        onRows: @escaping (Int) -> Void = { _ in }, isCancelled: @escaping () -> Bool = { false }
    ) throws -> ImportReport {
        for key in options.at {
            if let problem = FirebaseKey.problem(with: key) ?? (key.hasPrefix(".") ? "a priority is not a node" : nil) {
                throw StorageError(.invalidValue, "--at: \"\(key)\" cannot be a Firebase key: \(problem)")
            }
        }
        let clock = ContinuousClock()
        let started = clock.now
        var report = ImportReport()
        let wholeTree = options.mode == .replace && options.at.isEmpty
        var replaced = 0
        try connection.withTransaction(rollback: options.isDryRun) {
            if wholeTree {
                let tables = Store.treeTables.map(Query.quoted(identifier:)).joined(separator: ", ")
                try connection.execute(Query(unsafeSQL: "TRUNCATE \(tables)"))
            } else if !options.at.isEmpty {
                if let record = try recordPath(holding: options.at) {
                    throw StorageError(
                        .invalidValue, "--at /\(options.at.joined(separator: "/")) lies inside the record /\(record.joined(separator: "/"))",
                        hint: "Import the whole record with --at /\(record.joined(separator: "/")).")
                }
                if options.mode == .replace {
                    replaced = try Store.deleteRows(under: options.at, on: connection).values.reduce(0, +)
                }
            }
            // COPY FREEZE needs tables truncated in the same transaction.
            let loader = TableLoader(connection: connection, usesFreeze: wholeTree)
            loader.onRows = onRows
            loader.isCancelled = isCancelled
            let importer = TreeImporter(
                source: source, loader: loader, options: options,
                deleteRows: { [connection] path in try Store.deleteRows(under: path, on: connection) },
                onReject: onReject)
            do {
                try importer.run()
                try loader.flush()
            } catch let error as StorageError {
                loader.abort()
                throw error.adding(context: "import rolled back after reading \(importer.bytesRead) bytes")
            } catch {
                loader.abort()
                throw error
            }
            report = importer.report
            report.rowsReplaced += replaced
        }
        report.seconds = (clock.now - started).seconds
        report.isDryRun = options.isDryRun
        report.mode = options.mode
        return report
    }

    /// The path of a stored record that holds `path` inside it (`/posts/UID/KEY` for `/posts/UID/KEY/poster`),
    /// or is it when `orIs`, if there is one.
    func recordPath(holding path: [String], orIs: Bool = false) throws -> [String]? {
        guard let root = path.first else { return nil }
        for table in TreeTable.tables(under: root) where path.count - 1 > table.keyDepth - (orIs ? 1 : 0) {
            var query = Query.StringInterpolation(literalCapacity: 96, interpolationCount: table.keyDepth)
            query.appendLiteral("SELECT EXISTS (SELECT FROM ")
            query.appendInterpolation(identifier: table.name)
            query.appendLiteral(" WHERE true")
            table.appendKeyConditions(path.dropFirst(), to: &query)
            query.appendLiteral(")")
            if try connection.query(Query(stringInterpolation: query))[0].decode(Bool.self, at: 0) {
                return Array(path.prefix(table.keyDepth + 1))
            }
        }
        return nil
    }

    /// Deletes every row stored at or below an absolute Firebase path; returns the counts per table.
    static func deleteRows(under path: [String], on connection: Connection) throws -> [TreeTable: Int] {
        guard let root = path.first else { return [:] }
        let below = Array(path.dropFirst())
        var deleted: [TreeTable: Int] = [:]
        for table in TreeTable.tables(under: root) where below.count <= table.keyDepth {
            var query = Query.StringInterpolation(literalCapacity: 64, interpolationCount: 2)
            query.appendLiteral("DELETE FROM ")
            query.appendInterpolation(identifier: table.name)
            query.appendLiteral(" WHERE true")
            table.appendKeyConditions(below, to: &query)
            deleted[table, default: 0] += try connection.execute(Query(stringInterpolation: query))
        }
        var unmapped = Query.StringInterpolation(literalCapacity: 64, interpolationCount: 2)
        unmapped.appendLiteral("DELETE FROM unmapped_values WHERE true")
        TreeTable.appendUnmappedRange(at: path, to: &unmapped)
        deleted[.unmappedValues, default: 0] += try connection.execute(Query(stringInterpolation: unmapped))
        return deleted
    }
}
