import Foundation
import PostgresTestSupport
import Testing

/// The tree is clean under `swift format lint` with the root's `.swift-format`, so that style is mechanical and
/// review is about design. (CI runs the suite alone: the lint runs here rather than as a step of its own.)
@Suite("Source format")
struct SourceFormatTests {
    @Test func swiftFormatLintFindsNothing() throws {
        // Fix with: swift format format -i --configuration .swift-format -r Sources Tests Benchmarks Package.swift
        let output = try lint(["Sources", "Tests", "Benchmarks", "Package.swift"], configuration: ".swift-format")
        #expect(output.isEmpty, "\(output.prefix(4000))")
    }

    /// No module force-unwraps: a nil the code did not expect is an error it reports, or a stated invariant
    /// (`preconditionFailure` with its reason), never a bare crash. Tests may (a trap fails the test, as swift-format's
    /// rule allows for XCTest), so the rule is on for Sources alone.
    @Test func sourcesForceUnwrapNothing() throws {
        let base = try Data(contentsOf: Repository.url(".swift-format"))
        var configuration = try #require(try JSONSerialization.jsonObject(with: base) as? [String: Any])
        var rules = configuration["rules"] as? [String: Any] ?? [:]
        rules["NeverForceUnwrap"] = true
        configuration["rules"] = rules
        let directory = try makeTemporaryDirectory("admin-lint")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/swift-format.json"
        try JSONSerialization.data(withJSONObject: configuration).write(to: URL(fileURLWithPath: path))
        let output = try lint(["Sources"], configuration: path)
        #expect(output.isEmpty, "\(output.prefix(4000))")
    }

    /// What `swift format lint --strict` prints for `paths`, run from the repository's root.
    private func lint(_ paths: [String], configuration: String) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments =
            ["swift", "format", "lint", "--strict", "--configuration", configuration, "--recursive"] + paths
        process.currentDirectoryURL = Repository.root
        let findings = Pipe()
        process.standardOutput = findings
        process.standardError = findings
        try process.run()
        let output = String(decoding: findings.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return process.terminationStatus == 0 ? output : "exit \(process.terminationStatus)\n" + output
    }
}
