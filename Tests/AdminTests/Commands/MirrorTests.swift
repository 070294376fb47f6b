import Foundation
import PostgresTestSupport
import Storage
import Testing

/// `admin mirror` as the README's recipe runs it: a stream on stdin, exit statuses a supervisor acts on, the
/// metrics file, the maintenance lock, and curl reconnecting to a server that drops, redirects and revokes.
struct MirrorTests {
    static func event(_ name: String, _ path: String, _ data: String) -> String {
        "event: \(name)\ndata: {\"path\": \"\(path)\", \"data\": \(data)}\n\n"
    }

    @Test func exitStatusesSayWhatEndedTheStream() throws {
        let database = try databaseHolding(#"{"users": {"old": {"username": "gone"}}}"#)
        let db = ["--db", database.conninfo]
        let directory = try makeTemporaryDirectory("admin-mirror")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let stream =
            Self.event("put", "/", #"{"users": {"u1": {"username": "ana"}}}"#) + "event: keep-alive\ndata: null\n\n"
            + Self.event("patch", "/users", #"{"u2": {"username": "bo"}, "u1/username": "ann"}"#)
        let metrics = directory + "/mirror.prom"
        let ended = try AdminProcess.run(db + ["mirror", "-", "--metrics-file", metrics], input: stream)
        #expect(ended.status == 0, "\(ended.stderr)")
        #expect(ended.stderr.hasPrefix("The stream ended: 2 events applied in 2 transactions"), "\(ended.stderr)")
        let exported = try AdminProcess.run(db + ["export", "-"])
        #expect(exported.stdout == #"{"users":{"u1":{"username":"ann"},"u2":{"username":"bo"}}}"#)
        let text = try String(contentsOfFile: metrics, encoding: .utf8)
        #expect(text.contains("admin_mirror_events_applied_total 2\n") && text.contains("admin_mirror_connected 0\n"))
        let status = try AdminProcess.run(db + ["status"])
        #expect(
            status.stdout.contains("| not running: the stream ended at ")
                && status.stdout.contains(" after 2 events in 2 transactions"), "\(status.stdout)")

        let cancelled = try AdminProcess.run(db + ["mirror", "-"], input: "event: cancel\ndata: null\n\n")
        #expect(cancelled.status == 5 && cancelled.stderr.contains("cancelled the stream"), "\(cancelled.stderr)")
        let revoked = try AdminProcess.run(db + ["mirror", "-"], input: "event: auth_revoked\ndata: null\n\n")
        #expect(revoked.status == 6 && revoked.stderr.contains("credential"), "\(revoked.stderr)")
        let malformed = try AdminProcess.run(
            db + ["mirror", "-"],
            input: Self.event("put", "/users/u3", #"{"username": "cy"}"#) + "event: put\ndata: {\n\n")
        #expect(malformed.status == 65 && malformed.stderr.contains("line 4"), "\(malformed.stderr)")
        #expect(try AdminProcess.run(db + ["get", "/users/u3/username"]).stdout == "\"cy\"\n")
    }

    @Test func whileAMirrorRunsOtherMaintenanceIsRefusedNamingIt() throws {
        let database = try databaseHolding(#"{"users": {"u1": {"username": "ana"}}}"#)
        let db = ["--db", database.conninfo]
        let (process, input, _, errors) = try AdminProcess.start(db + ["mirror", "-"])
        input.fileHandleForWriting.write(Data(Self.event("put", "/", #"{"users": {"u1": {"username": "ana"}}}"#).utf8))
        // Once running (status says so: it took the lock first), the mirror holds the lock until it ends; during
        // its first put, a sync, the refusal names the sync.
        var status = try AdminProcess.run(db + ["status", "--format", "json"])
        for _ in 0..<100 where !status.stdout.contains(#""mirror": {"state": "running""#) {
            Thread.sleep(forTimeInterval: 0.1)
            status = try AdminProcess.run(db + ["status", "--format", "json"])
        }
        #expect(status.stdout.contains(#""mirror": {"state": "running""#), "\(status.stdout)")
        var refused: AdminRun?
        for _ in 0..<100 {
            let run = try AdminProcess.run(db + ["check", "--fix", "--yes"])
            if run.status != 0 { refused = run }
            if run.stderr.contains("a mirror is running") { break }
            Thread.sleep(forTimeInterval: 0.1)
        }
        #expect(refused?.stderr.contains("a mirror is running") == true, "\(refused?.stderr ?? "never refused")")
        // The app's writes go on beside it.
        #expect(try AdminProcess.run(db + ["set", "/users/u9/username", "\"zed\""]).status == 0)
        input.fileHandleForWriting.closeFile()
        let messages = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(messages)")
    }

    /// `kill -9` in the middle of a stream, events still coming: the store holds what the last committed
    /// transaction left, status says the mirror stopped without ending, and the next connection's first put
    /// brings the store to the database's tree.
    @Test func killedMidStreamThenRestartedEndsEqualToTheTree() throws {
        let database = try databaseHolding("null")
        let db = ["--db", database.conninfo]
        let (process, input, _, _) = try AdminProcess.start(db + ["mirror", "-", "--allow-empty"])
        input.fileHandleForWriting.write(Data(Self.event("put", "/", #"{"users": {"u0": {"username": "a"}}}"#).utf8))
        for index in 0..<3_000 {
            let patch = Self.event(
                "patch", "/", "{\"users/u\(index % 50)/username\": \"n\(index)\", \"log/e\(index)\": \(index)}")
            input.fileHandleForWriting.write(Data(patch.utf8))
        }
        // Killed once some patches are in: mid-stream, or waiting for more (the stream never ends).
        for _ in 0..<200 {
            let status = try AdminProcess.run(db + ["status", "--format", "json"]).stdout
            if status.contains(#""state": "running""#), !status.contains(#""events_applied": 1,"#) { break }
            Thread.sleep(forTimeInterval: 0.02)
        }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        let stopped = try AdminProcess.run(db + ["status"])
        #expect(stopped.stdout.contains("stopped without ending"), "\(stopped.stdout)")
        // Whole transactions only: each user's name came in one event with its log entry.
        let tree = try TreeValue.parse(json: try AdminProcess.run(db + ["export", "-"]).stdout)
        for (key, user) in tree?["users"]?.children ?? [:] {
            guard case .string(let name)? = user["username"], name != "a" else { continue }
            #expect(tree?["log"]?["e" + name.dropFirst()] != nil, "\(key): \(name) without its log entry")
        }
        let final = #"{"log":{"e1":1},"users":{"u1":{"username":"final"}}}"#
        let restarted = try AdminProcess.run(db + ["mirror", "-"], input: Self.event("put", "/", final))
        #expect(restarted.status == 0, "\(restarted.stderr)")
        #expect(try AdminProcess.run(db + ["export", "-"]).stdout == final)
    }

    /// The recipe's loop against a server on loopback that serves a stream, drops the connection, answers 307,
    /// and revokes the credential: each connection's first put brings the store to the server's tree.
    @Test func thePackagedStreamReconnectingToALocalServerEndsEqualToItsTree() throws {
        let database = try databaseHolding("null")
        let directory = try makeTemporaryDirectory("admin-mirror-server")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let server = """
            import http.server, json, sys
            streams = [
                [("put", "/", {"users": {"u1": {"username": "ana"}}}), ("patch", "/users", {"u2": {"username": "bo"}})],
                "redirect",
                [("put", "/", {"users": {"u1": {"username": "ana"}, "u2": {"username": "bo"}, "u3": {"username": "cy"}}}),
                 ("put", "/users/u1", None), ("auth_revoked", None, None)],
                [("put", "/", {"users": {"u2": {"username": "bo"}, "u3": {"username": "cy"}}, "q": [1, 2]}),
                 ("patch", "/", {"users/u4": {"username": "di"}, "q/1": 3})],
            ]
            class Handler(http.server.BaseHTTPRequestHandler):
                count = 0
                def do_GET(self):
                    stream = streams[min(Handler.count, len(streams) - 1)]
                    Handler.count += 1
                    if stream == "redirect":
                        self.send_response(307)
                        self.send_header("Location", "/moved.json")
                        self.end_headers()
                        return
                    assert self.headers["Accept"] == "text/event-stream"
                    self.send_response(200)
                    self.send_header("Content-Type", "text/event-stream")
                    self.end_headers()
                    for name, path, data in stream:
                        body = "null" if path is None else json.dumps({"path": path, "data": data})
                        self.wfile.write(("event: %s\\ndata: %s\\n\\n" % (name, body)).encode())
                        self.wfile.write(b"event: keep-alive\\ndata: null\\n\\n")
                        self.wfile.flush()
                def log_message(self, *args): pass
            server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
            print(server.server_address[1], flush=True)
            server.serve_forever()
            """
        try server.write(toFile: directory + "/server.py", atomically: true, encoding: .utf8)
        let python = Process()
        python.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        python.arguments = [directory + "/server.py"]
        let portPipe = Pipe()
        python.standardOutput = portPipe
        // Not the test's own stderr: a server left running would keep the test runner waiting on it.
        python.standardError = FileHandle.nullDevice
        try python.run()
        defer { python.terminate() }
        var buffer = Data()
        let port = portPipe.fileHandleForReading.read(until: "\n", into: &buffer)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        // The packaged service's connection (packaging/admin-mirror-stream), run four times as systemd's
        // Restart= would; the token comes from the credentials directory, never a command line.
        try "secret-token".write(toFile: directory + "/firebase-token", atomically: true, encoding: .utf8)
        let loop = """
            for attempt in 1 2 3 4; do
              "$STREAM"
              echo "exit $?"
            done
            """
        let run = try AdminProcess.runShell(
            loop, input: "",
            environment: AdminProcess.environment([
                "DATABASE_URL": database.conninfo, "CREDENTIALS_DIRECTORY": directory,
                "FIREBASE_URL": "http://127.0.0.1:\(port)/.json",
                "STREAM": Repository.url("packaging/admin-mirror-stream").path,
                "ADMIN_MIRROR_METRICS_FILE": directory + "/admin_mirror.prom",
                "PATH": AdminProcess.executable.deletingLastPathComponent().path + ":/usr/bin:/bin",
            ]), directory: directory)
        #expect(run.stdout == "exit 0\nexit 6\nexit 0\nexit 0\n", "\(run.stdout)\(run.stderr)")
        let metrics = (try? String(contentsOfFile: directory + "/admin_mirror.prom", encoding: .utf8)) ?? ""
        #expect(metrics.contains("admin_mirror_events_applied_total"), "\(metrics)")
        let exported = try AdminProcess.run(["--db", database.conninfo, "export", "-"])
        #expect(
            exported.stdout
                == #"{"q":[1,3],"users":{"u2":{"username":"bo"},"u3":{"username":"cy"},"u4":{"username":"di"}}}"#)
    }
}
