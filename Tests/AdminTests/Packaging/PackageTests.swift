import Foundation
import PostgresTestSupport
import Testing

/// Whether Debian's packaging tools, which `scripts/package-deb` uses, are installed.
let packagingToolsArePresent = ["/usr/bin/dpkg-deb", "/usr/bin/dpkg-shlibdeps", "/usr/bin/strip"].allSatisfy {
    FileManager.default.isExecutableFile(atPath: $0)
}

/// `scripts/package-deb` builds a package that installs on a server without Swift: its unpacked binary runs
/// with the toolchain hidden (an empty directory mounted over it, in a mount namespace of its own), its manual
/// page renders, its bash completion completes, and lintian finds no error. Runs where Debian's packaging tools
/// are (the build takes a release build of its own: about 2 minutes the first time).
@Suite(.enabled(if: packagingToolsArePresent), .serialized)
struct PackageTests {
    /// Runs `command` in bash from the repository's root, in the test's environment.
    static func shell(_ command: String, timeout: TimeInterval = 120) throws -> AdminRun {
        try AdminProcess.runShell(
            command, input: "", environment: AdminProcess.environment([:]), directory: Repository.root.path,
            timeout: timeout)
    }

    /// The toolchain the test binaries link their Swift runtime from (`/opt/swift` here), from the debug
    /// `admin`'s own libraries.
    static func toolchainDirectory() throws -> String {
        let ldd = try shell("ldd \(shellQuoted(AdminProcess.executable.path))")
        let line = try #require(ldd.stdout.split(separator: "\n").first { $0.contains("libswiftCore.so") })
        let path = try #require(line.split(separator: " ").first { $0.hasPrefix("/") })
        let range = try #require(path.range(of: "/usr/lib/swift"))
        return String(path[..<range.lowerBound])
    }

    /// Installs the package into a scratch root with dpkg and its maintainer scripts (chrootless, as DPKG_ROOT
    /// installs run), enables the timer as an operator would, and purges it: the system user is made, and the
    /// purge leaves no unit link (dangling before the package had maintainer scripts) and no state behind.
    static func installAndPurge(_ deb: String, in root: String) throws {
        let r = shellQuoted(root)
        // The host's account files, for useradd --prefix where systemd-sysusers is missing.
        let setUp = try shell(
            "mkdir -p \(r)/var/lib/dpkg/info \(r)/var/lib/dpkg/updates \(r)/etc && "
                + "touch \(r)/var/lib/dpkg/status \(r)/var/lib/dpkg/available && "
                + "cp /etc/passwd /etc/group \(r)/etc/ && { cp /etc/shadow /etc/gshadow \(r)/etc/ 2>/dev/null || true; }"
        )
        #expect(setUp.status == 0, "\(setUp.stderr)")
        let dpkg = "dpkg --root=\(r) --force-script-chrootless --force-depends --force-not-root"
        let install = try shell("\(dpkg) --install \(shellQuoted(deb))")
        #expect(install.status == 0, "\(install.stdout)\(install.stderr)")
        let passwd = (try? String(contentsOfFile: root + "/etc/passwd", encoding: .utf8)) ?? ""
        #expect(passwd.contains("admin-check:") && passwd.contains("admin-mirror:"), "no system user: \(passwd)")
        let link = root + "/etc/systemd/system/timers.target.wants/admin-check.timer"
        // As `systemctl enable` makes it, by hand where systemctl is not installed.
        let enable = try shell(
            "if command -v systemctl >/dev/null; then systemctl --root=\(r) enable admin-check.timer; else "
                + "mkdir -p \(r)/etc/systemd/system/timers.target.wants && ln -s /lib/systemd/system/admin-check.timer "
                + "\(r)/etc/systemd/system/timers.target.wants/admin-check.timer; fi")
        #expect(enable.status == 0, "\(enable.stderr)")
        #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: link)) != nil, "enabling made no link")
        for state in ["admin-check", "admin-mirror"] {
            try FileManager.default.createDirectory(
                atPath: root + "/var/lib/" + state, withIntermediateDirectories: true)
        }
        let purge = try shell("\(dpkg) --purge admin")
        #expect(purge.status == 0, "\(purge.stdout)\(purge.stderr)")
        #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: link)) == nil, "a dangling timer link")
        #expect(!FileManager.default.fileExists(atPath: root + "/var/lib/admin-check"))
        #expect(!FileManager.default.fileExists(atPath: root + "/var/lib/admin-mirror"))
        #expect(!FileManager.default.fileExists(atPath: root + "/usr/bin/admin"))
    }

    @Test func thePackageInstallsAndRunsWithoutTheToolchain() throws {
        let directory = try makeTemporaryDirectory("admin-deb")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let build = try Self.shell("scripts/package-deb \(shellQuoted(directory))", timeout: 1500)
        #expect(build.status == 0, "\(build.stderr.suffix(3000))")
        let debs = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".deb") }
        let deb = directory + "/" + (try #require(debs.first))

        // The name, the package's version and the binary's agree; it depends on Debian's packages only.
        let version = try AdminProcess.run(["--version"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(debs == ["admin_\(version)_amd64.deb"] || debs == ["admin_\(version)_arm64.deb"])
        let fields = try Self.shell("dpkg-deb -f \(shellQuoted(deb)) Version Depends Recommends").stdout
        #expect(fields.contains("Version: \(version)"), "\(fields)")
        #expect(fields.contains("libpq5") && fields.contains("libedit2"), "\(fields)")
        #expect(fields.contains("Recommends: postgresql-15, bash-completion"), "\(fields)")
        #expect(!fields.lowercased().contains("swift"), "\(fields)")

        let root = directory + "/root"
        #expect(try Self.shell("dpkg -x \(shellQuoted(deb)) \(shellQuoted(root))").status == 0)
        let binary = root + "/usr/bin/admin"
        for path in [
            "usr/share/man/man1/admin.1.gz", "usr/share/bash-completion/completions/admin",
            "usr/share/zsh/vendor-completions/_admin", "usr/share/fish/vendor_completions.d/admin.fish",
            "lib/systemd/system/admin-check.service", "lib/systemd/system/admin-check.timer",
            "etc/default/admin-check", "usr/share/doc/admin/copyright", "lib/systemd/system/admin-mirror.service",
            "etc/default/admin-mirror", "usr/lib/admin/admin-mirror-stream",
        ] {
            #expect(FileManager.default.fileExists(atPath: root + "/" + path), "\(path) is missing")
        }
        let unit = try String(contentsOfFile: root + "/lib/systemd/system/admin-check.service", encoding: .utf8)
        #expect(!unit.lowercased().contains("password="), "a password in the unit")
        // A dynamic user's state directory would be under /var/lib/private, which node_exporter cannot read.
        #expect(unit.contains("User=admin-check") && !unit.contains("\nDynamicUser="), "\(unit)")
        // The mirror's credential and password come as credentials; it reconnects but on 5 and 65.
        let mirror = try String(contentsOfFile: root + "/lib/systemd/system/admin-mirror.service", encoding: .utf8)
        #expect(!mirror.lowercased().contains("password=") && !mirror.contains("auth="), "\(mirror)")
        #expect(mirror.contains("LoadCredential=firebase-token:") && mirror.contains("RestartPreventExitStatus=5 65"))
        #expect(FileManager.default.isExecutableFile(atPath: root + "/usr/lib/admin/admin-mirror-stream"))

        // The same commit gives the same bytes: packaged again from the same build, and with no path of this
        // checkout or its build in the binary (which is what a build in another clone would change).
        let again = directory + "/again"
        #expect(try Self.shell("scripts/package-deb \(shellQuoted(again))", timeout: 1500).status == 0)
        let second = again + "/" + (debs.first ?? "")
        if !FileManager.default.contentsEqual(atPath: deb, andPath: second) {
            // Which files differ, and where: a difference that shows only beside the whole suite says no more.
            let a = shellQuoted(directory + "/unpacked-1"), b = shellQuoted(directory + "/unpacked-2")
            let diff = try Self.shell(
                "dpkg-deb -R \(shellQuoted(deb)) \(a) && dpkg-deb -R \(shellQuoted(second)) \(b) && "
                    + "{ diff -r --brief \(a) \(b); for f in $(diff -r --brief \(a) \(b) | awk '/^Files/ {print $2}'); do "
                    + "cmp -l \"$f\" \"${f/unpacked-1/unpacked-2}\" | head -n 5; done; } 2>&1 || true")
            Issue.record("packaging again gave other bytes:\n\(diff.stdout)")
        }
        let paths = try Self.shell(
            "grep -c -a -F -e \(shellQuoted(Repository.root.path)) \(shellQuoted(root + "/usr/bin/admin")) || true")
        #expect(paths.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "0", "build paths in the binary")

        try Self.installAndPurge(deb, in: directory + "/system")

        // Runs `arguments` of the unpacked binary where the toolchain cannot be reached: as root, in a mount
        // namespace with an empty directory over it; otherwise with nothing but the system's paths.
        let toolchain = try Self.toolchainDirectory()
        let hides = getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/unshare")
        func hidden(_ program: String, _ arguments: String) throws -> AdminRun {
            let command =
                hides
                ? "unshare -m sh -c 'mount -t tmpfs none \"$0\" && exec \"$@\"' \(shellQuoted(toolchain)) "
                    + "\(shellQuoted(program)) \(arguments)"
                : "env -i PATH=/usr/bin:/bin HOME=\(shellQuoted(directory)) \(shellQuoted(program)) \(arguments)"
            return try Self.shell(command)
        }
        if hides {
            // The debug build links the toolchain's runtime: hidden, it cannot start.
            let debug = try hidden(AdminProcess.executable.path, "--version")
            #expect(debug.status != 0 && debug.stderr.contains("libswift"), "\(debug)")
        }
        let ldd = try Self.shell("ldd \(shellQuoted(binary))").stdout
        #expect(!ldd.contains("swift"), "\(ldd)")

        let versionRun = try hidden(binary, "--version")
        #expect(versionRun.status == 0 && versionRun.stdout == version + "\n", "\(versionRun)")
        let help = try hidden(binary, "help")
        #expect(help.status == 0 && help.stdout.contains("Status and schema:"), "\(help)")
        let database = try TestPostgres.makeDatabase()
        let db = "--db \(shellQuoted(database.conninfo))"
        let status = try hidden(binary, "\(db) status")
        #expect(status.status == 0 && status.stdout.contains("users"), "\(status)")
        let sample = Repository.url("exports/sample-makestagram.json").path
        let imported = try hidden(binary, "\(db) import \(shellQuoted(sample))")
        #expect(imported.status == 0, "\(imported)")
        let exported = directory + "/export.json"
        let export = try hidden(binary, "\(db) export \(shellQuoted(exported)) --pretty")
        #expect(export.status == 0, "\(export)")
        #expect(FileManager.default.contentsEqual(atPath: exported, andPath: sample), "export differs from import")

        // The manual page renders without a warning and holds the operator's sections.
        let manual = try Self.shell(
            "MANWIDTH=80 man --warnings -l \(shellQuoted(root + "/usr/share/man/man1/admin.1.gz"))")
        #expect(manual.status == 0 && manual.stderr.isEmpty, "\(manual.stderr)")
        for section in ["ADMIN(1)", "OPTIONS", "COMMANDS", "CONNECTING", "THE EMBEDDED CLUSTER", "EXIT STATUS"] {
            #expect(manual.stdout.contains(section), "\(section) is missing from admin(1)")
        }

        // bash completes a command name and a command's option, as bash-completion sources the script.
        func complete(_ words: [String]) throws -> [String] {
            let line = words.joined(separator: " ")
            let script = """
                shopt -s extglob; source "$1"; COMP_WORDS=(\(words.map(shellQuoted).joined(separator: " ")))
                COMP_CWORD=\(words.count - 1); COMP_LINE=\(shellQuoted(line)); COMP_POINT=${#COMP_LINE}
                _admin admin \(shellQuoted(words.last ?? "")) \(shellQuoted(words.dropLast().last ?? ""))
                printf '%s\\n' "${COMPREPLY[@]}"
                """
            let run = try Self.shell(
                "bash -c \(shellQuoted(script)) _ \(shellQuoted(root + "/usr/share/bash-completion/completions/admin"))"
            )
            return run.stdout.split(separator: "\n").map(String.init)
        }
        #expect(try complete(["admin", "sta"]) == ["status"])
        #expect(try complete(["admin", "check", "--fa"]) == ["--fail-on"])
        // Check names, and file names where a command takes a file.
        #expect(try complete(["admin", "check", "--only", "like_"]) == ["like_count"])
        let partial = Repository.url("exports/sample-makestagram.js").path
        #expect(try complete(["admin", "import", partial]).contains(partial + "on"))

        // lintian, Debian's package checker, where it is installed: no error (and, today, no warning).
        if FileManager.default.isExecutableFile(atPath: "/usr/bin/lintian") {
            let lintian = try Self.shell("lintian \(shellQuoted(deb))", timeout: 600)
            let tags = lintian.stdout.split(separator: "\n").filter { $0.hasPrefix("E:") || $0.hasPrefix("W:") }
            #expect(lintian.status == 0 && tags.isEmpty, "\(lintian.stdout)")
        }
    }
}
