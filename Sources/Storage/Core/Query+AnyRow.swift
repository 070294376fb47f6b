internal import PostgresClient

extension Query {
    /// `EXISTS (SELECT 1 FROM table [WHERE condition] LIMIT 1)`: whether a table holds a row (that meets the
    /// condition). The LIMIT changes nothing on one server, whose EXISTS stops at the first row anyway; Citus plans
    /// an uncorrelated EXISTS by first collecting its subquery's rows from every shard, and with the LIMIT each
    /// shard sends at most one (the whole 20k-user timeline took 672 ms without it, 54 ms with it).
    static func anyRow(in table: String, where condition: Query? = nil) -> Query {
        guard let condition else { return "EXISTS (SELECT 1 FROM \(identifier: table) LIMIT 1)" }
        return "EXISTS (SELECT 1 FROM \(identifier: table) WHERE \(condition) LIMIT 1)"
    }
}
