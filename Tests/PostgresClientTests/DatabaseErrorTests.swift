import Testing

@testable import PostgresClient

@Suite("Database errors (no server)")
struct DatabaseErrorTests {
    @Test func databaseErrorDescriptionFollowsPsqlLayout() {
        let error = DatabaseError(
            .server, "duplicate key value violates unique constraint \"users_pkey\"", sqlState: .uniqueViolation,
            detail: "Key (uid)=(u1) already exists.", hint: nil, constraint: "users_pkey",
            statement: "INSERT INTO users VALUES ($1)")
        #expect(
            error.description == """
                duplicate key value violates unique constraint "users_pkey" (SQLSTATE 23505)
                DETAIL:  Key (uid)=(u1) already exists.
                STATEMENT:  INSERT INTO users VALUES ($1)
                """)
    }
}
