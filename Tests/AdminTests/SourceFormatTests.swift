import Foundation
import PostgresTestSupport
import Testing

/// The tree is clean under `swift format lint` with the root's `.swift-format`, so that style is mechanical and
/// review is about design. (CI runs the suite alone: the lint runs here rather than as a step of its own.)
@Suite("Source format")
struct SourceFormatTests {
    @Test func swiftFormatLintFindsNothing() throws {
        let root = Repository.root
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            "swift", "format", "lint", "--strict", "--configuration", ".swift-format", "--recursive",
            "Sources", "Tests", "Benchmarks", "Package.swift",
        ]
        process.currentDirectoryURL = root
        let findings = Pipe()
        process.standardOutput = findings
        process.standardError = findings
        try process.run()
        let output = String(decoding: findings.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        // Fix with: swift format format -i --configuration .swift-format -r Sources Tests Benchmarks Package.swift
        #expect(process.terminationStatus == 0 && output.isEmpty, "\(output.prefix(4000))")
    }
}
