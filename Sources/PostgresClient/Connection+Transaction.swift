import CLibPQ
import Foundation

extension Connection {
    /// The isolation level of a transaction.
    public enum IsolationLevel: String, Sendable {
        /// Each statement sees what was committed before it began (PostgreSQL's default).
        case readCommitted = "READ COMMITTED"
        /// Every statement sees the snapshot taken at the transaction's first statement.
        case repeatableRead = "REPEATABLE READ"
        /// As if transactions ran one after another; may fail with `SQLState.serializationFailure`.
        case serializable = "SERIALIZABLE"
    }

    /// Runs `body` in a transaction: committed when it returns, rolled back when it throws.
    ///
    /// Inside another transaction it becomes a savepoint, so a failing inner block undoes only itself.
    /// `--dry-run` is this with a body that throws after reporting, or `rollback: true`.
    @discardableResult
    public func withTransaction<Result>(
        isolation: IsolationLevel = .readCommitted, readOnly: Bool = false, rollback: Bool = false,
        _ body: () throws -> Result
    ) throws -> Result {
        if isInTransaction {
            return try withSavepoint(rollback: rollback, body)
        }
        try execute(Query(unsafeSQL: "BEGIN ISOLATION LEVEL \(isolation.rawValue)\(readOnly ? " READ ONLY" : "")"))
        let result: Result
        do {
            result = try body()
        } catch {
            rollbackQuietly()
            throw error
        }
        if rollback {
            try execute("ROLLBACK")
            return result
        }
        // COMMIT of a transaction that failed (an error the body caught) answers ROLLBACK instead of an error.
        let tag = try commandTag(of: "COMMIT")
        guard tag == "COMMIT" else {
            throw DatabaseError(
                .server, "the transaction was rolled back because a statement in it failed",
                statement: "COMMIT")
        }
        return result
    }

    private func withSavepoint<Result>(rollback: Bool, _ body: () throws -> Result) throws -> Result {
        try execute("SAVEPOINT admin_nested")
        do {
            let result = try body()
            try execute(rollback ? "ROLLBACK TO SAVEPOINT admin_nested" : "RELEASE SAVEPOINT admin_nested")
            return result
        } catch {
            if isConnected { _ = try? execute("ROLLBACK TO SAVEPOINT admin_nested") }
            throw error
        }
    }

    /// Rolls back, ignoring failure: the connection may be gone, and then so is the transaction.
    func rollbackQuietly() {
        guard isConnected else { return }
        // A statement or COPY cut short (a cancel, a failed send) leaves results to read before anything else.
        if PQtransactionStatus(handle) == PQTRANS_ACTIVE { drainResults() }
        guard isInTransaction else { return }
        _ = try? execute("ROLLBACK")
    }

    private func commandTag(of statement: Query) throws -> String {
        let result = try query(statement)
        return String(cString: PQcmdStatus(result.pointer))
    }
}
