// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "makestagram-admin",
    products: [
        .executable(name: "admin", targets: ["Admin"]),
        .library(name: "Storage", targets: ["Storage"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2")
    ],
    targets: [
        // libpq through pkg-config; the headers come with Debian's libpq-dev.
        .systemLibrary(
            name: "CLibPQ",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"])]
        ),
        // Turns sql/*.sql into Swift source, so the binary carries its migrations wherever it is installed.
        .executableTarget(name: "EmbedSQL"),
        .plugin(
            name: "EmbedMigrations",
            capability: .buildTool(),
            dependencies: ["EmbedSQL"]
        ),
        .systemLibrary(name: "CZlib", path: "Sources/CZlib"),
        // OpenSSL's libcrypto, for Firebase Auth's scrypt password hashes; libpq links it already.
        .systemLibrary(name: "CCrypto", path: "Sources/CCrypto"),
        // PostgreSQL through libpq: connections, statements with bind parameters, COPY, transactions,
        // notifications, results, and DatabaseError with the server's SQLSTATE.
        .target(name: "PostgresClient", dependencies: ["CLibPQ"], swiftSettings: hotPathSettings),
        // Firebase's JSON trees without a database: the streaming reader and writer, keys and their order,
        // JavaScript numbers, gzip.
        .target(name: "FirebaseTree", dependencies: ["CZlib"], swiftSettings: hotPathSettings),
        .target(
            name: "Storage",
            dependencies: ["PostgresClient", "FirebaseTree", "CCrypto"],
            swiftSettings: hotPathSettings,
            plugins: ["EmbedMigrations"]
        ),
        .executableTarget(
            name: "Admin",
            dependencies: [
                "Storage",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            // A file sees the members of the modules it imports only: Admin imports Storage, never
            // PostgresClient, so it cannot send SQL.
            swiftSettings: [.enableUpcomingFeature("MemberImportVisibility")]
        ),
        // Speed and memory benchmarks, run in release mode (see BENCHMARKS.md).
        .executableTarget(
            name: "AdminBenchmarks",
            dependencies: ["Storage", "PostgresClient"],
            path: "Benchmarks",
            exclude: [
                "python_peer_import.py", "evolve_export.py", "reader_wait.sh", "import_rounds.sh", "citus_commands.sh",
                "export_rounds.sh", "measure.sh", "read_commands.sh", "citus_cluster.sh",
            ]
        ),
        // What the fuzzers run (Fuzz/run.sh with libFuzzer; a smoke run in the tests), and libFuzzer's entry
        // point, which replays a corpus when built without -DFUZZING.
        .target(name: "FuzzTargets", dependencies: ["Storage"], path: "Fuzz/Targets"),
        .systemLibrary(name: "CFuzzer", path: "Fuzz/CFuzzer"),
        .executableTarget(name: "Fuzz", dependencies: ["FuzzTargets", "CFuzzer"], path: "Fuzz/Main"),
        // What tests without a database share: a seeded random generator.
        .target(name: "TreeTestSupport", path: "Tests/TreeTestSupport"),
        // Starts the throwaway PostgreSQL cluster the integration tests run against.
        .target(
            name: "PostgresTestSupport",
            dependencies: ["Storage", "PostgresClient"],
            path: "Tests/PostgresTestSupport"
        ),
        .testTarget(
            name: "FirebaseTreeTests",
            dependencies: ["FirebaseTree", "TreeTestSupport"]
        ),
        .testTarget(
            name: "StorageTests",
            dependencies: [
                "Storage", "FirebaseTree", "PostgresClient", "PostgresTestSupport", "TreeTestSupport", "FuzzTargets",
            ],
            exclude: ["Fixtures"]
        ),
        .testTarget(
            name: "PostgresClientTests",
            dependencies: ["PostgresClient", "PostgresTestSupport"]
        ),
        .testTarget(
            name: "AdminTests",
            dependencies: ["Admin", "Storage", "PostgresClient", "PostgresTestSupport", "TreeTestSupport"],
            exclude: ["Transcripts", "HostileInputs"]
        ),
    ],
    swiftLanguageModes: [.v6]
)

/// The modules on import's and export's per-byte path check exclusive access at run time in debug builds only
/// (every test run), not in release: the checks cost a quarter of import's CPU (232 MB: 11.2-14.0 s user with
/// them, 8.1-10.0 s without) and a tenth of export's (BENCHMARKS.md, "Exclusivity checks").
var hotPathSettings: [SwiftSetting] {
    [.unsafeFlags(["-enforce-exclusivity=unchecked"], .when(configuration: .release))]
}
