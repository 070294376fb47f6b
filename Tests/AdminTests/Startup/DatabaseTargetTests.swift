import ArgumentParser
import Testing

@testable import Admin

@Suite("Choosing the database")
struct DatabaseTargetTests {
    func options(_ arguments: [String]) throws -> GlobalOptions {
        try GlobalOptions.parse(arguments)
    }

    @Test func explicitDatabaseWins() throws {
        let target = DatabaseTarget.resolve(
            options: try options(["--db", "postgresql://a/b"]),
            environment: ["DATABASE_URL": "postgresql://c/d", "PGHOST": "x"])
        #expect(target == .conninfo("postgresql://a/b"))
    }

    @Test func thenDatabaseURL() throws {
        let target = DatabaseTarget.resolve(
            options: try options([]), environment: ["DATABASE_URL": "postgresql://c/d", "PGHOST": "x"])
        #expect(target == .conninfo("postgresql://c/d"))
    }

    @Test func thenLibpqEnvironment() throws {
        for variable in DatabaseTarget.libpqVariables {
            #expect(DatabaseTarget.resolve(options: try options([]), environment: [variable: "v"]) == .environment)
        }
        // A password or SSL mode alone does not name a server.
        let target = DatabaseTarget.resolve(
            options: try options([]), environment: ["PGPASSWORD": "p", "HOME": "/home/a"])
        #expect(target != .environment)
    }

    @Test func otherwiseTheEmbeddedCluster() throws {
        #expect(
            DatabaseTarget.resolve(options: try options(["--data-dir", "/d"]), environment: ["ADMIN_DATA_DIR": "/e"])
                == .embedded(directory: "/d"))
        #expect(
            DatabaseTarget.resolve(options: try options([]), environment: ["ADMIN_DATA_DIR": "/e"])
                == .embedded(directory: "/e"))
        if case .embedded(let directory) = DatabaseTarget.resolve(
            options: try options([]), environment: ["HOME": "/home/a"])
        {
            #expect(directory.hasSuffix("/makestagram-admin"))
        } else {
            Issue.record("expected the embedded cluster")
        }
    }
}
