import Foundation
import PostgresTestSupport
import Storage
import Testing

/// The samples of a metrics file as `name{labels}` → value, read line by line (HELP and TYPE lines skipped).
func samples(in file: String) throws -> [String: Double] {
    var samples: [String: Double] = [:]
    for line in try String(contentsOfFile: file, encoding: .utf8).split(separator: "\n") where !line.hasPrefix("#") {
        let parts = line.split(separator: " ")
        samples[String(parts[0])] = Double(parts[1])
    }
    return samples
}

/// Prometheus's own Python client, whose parser reads the text exposition format as Prometheus does: installed
/// from PyPI into `.build/test-python` on first use (pure Python, no dependencies), nil when that cannot be done.
enum PrometheusClient {
    static let pythonPath: String? = {
        let directory = Repository.url(".build/test-python").path
        func run(_ arguments: [String]) -> Bool {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["python3"] + arguments
            process.environment = ProcessInfo.processInfo.environment.merging(["PYTHONPATH": directory]) { $1 }
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            guard (try? process.run()) != nil else { return false }
            process.waitUntilExit()
            return process.terminationStatus == 0
        }
        if run(["-c", "import prometheus_client.parser"]) { return directory }
        guard
            run([
                "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-warn-script-location",
                "--target", directory, "prometheus_client==0.26.0",
            ]),
            run(["-c", "import prometheus_client.parser"])
        else { return nil }
        return directory
    }()

    /// The samples of the exposition text in `file` as prometheus_client parses them: `name{labels}` → value.
    static func parse(_ file: String) throws -> [String: Double] {
        let script = """
            import json, sys
            from prometheus_client.parser import text_string_to_metric_families
            samples = {}
            for family in text_string_to_metric_families(open(sys.argv[1]).read()):
                assert family.type == "gauge", family.name
                assert family.documentation, family.name
                for sample in family.samples:
                    labels = ",".join('%s="%s"' % item for item in sorted(sample.labels.items()))
                    samples[sample.name + ("{%s}" % labels if labels else "")] = sample.value
            print(json.dumps(samples))
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", script, file]
        process.environment = ProcessInfo.processInfo.environment.merging(["PYTHONPATH": pythonPath ?? ""]) { $1 }
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw CocoaError(.fileReadCorruptFile) }
        return try JSONDecoder().decode([String: Double].self, from: data)
    }
}

@Suite("check's metrics file")
struct CheckMetricsFormatTests {
    @Test(.enabled(if: PrometheusClient.pythonPath != nil, "needs python3 and prometheus_client (from PyPI)"))
    func prometheusOwnParserReadsTheFileUpAndDown() throws {
        let database = try databaseHolding(damagedTreeWithACleanPost)
        let directory = try makeTemporaryDirectory("admin-metrics")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let metrics = directory + "/admin_check.prom"
        #expect(
            try AdminProcess.run(["--db", database.conninfo, "check", "-q", "--metrics-file", metrics]).status == 3)
        let parsed = try PrometheusClient.parse(metrics)
        #expect(parsed == (try samples(in: metrics)))
        #expect(parsed["admin_check_violations{check=\"like_count\"}"] == 1)
        #expect(parsed.count == 3 + 3 * IntegrityCheck.allCases.count)

        let down = try AdminProcess.run([
            "--db", "host=\(directory) port=1", "check", "--metrics-file", metrics,
            "--metrics-label", "database=app", "--metrics-label", "env=a \"b\"\\c",
        ])
        #expect(down.status == 2)
        #expect(try PrometheusClient.parse(metrics)["admin_check_up{database=\"app\",env=\"a \"b\"\\c\"}"] == 0)
    }
}
