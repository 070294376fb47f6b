import ArgumentParser
import Foundation

/// `admin(1)` in troff's man macros, made from the console's own help: the options and every command's
/// `--help`, with what an operator needs beside them (connecting, the embedded cluster, exit status, cron).
/// `admin --generate-manual` prints it; the Debian package installs it (`scripts/package-deb`).
enum ManualPage {
    /// The whole page.
    static var troff: String {
        var page = """
            .TH ADMIN 1 "" "admin \(AdminMain.version)" "User Commands"
            .SH NAME
            admin \\- operate the app's Firebase data on PostgreSQL: import, export, check, repair, inspect
            .SH SYNOPSIS
            .B admin
            [\\fIoptions\\fR] [\\fIcommand\\fR [\\fIarguments\\fR...]]
            .br
            .B admin
            [\\fIoptions\\fR] \\fB\\-c\\fR \\fIcommand\\fR [\\fB\\-c\\fR \\fIcommand\\fR...]
            .br
            .B admin
            [\\fIoptions\\fR] \\fB\\-f\\fR \\fIfile\\fR
            .SH DESCRIPTION

            """
        page += paragraphs(description)
        page += ".SH OPTIONS\n" + preformatted(section("OPTIONS:", of: AdminMain.helpMessage(columns: width)))
        page += ".SH COMMANDS\n" + preformatted(Help.overview(width: width))
        for group in CommandGroup.all {
            for command in group.commands {
                let name = command._commandName
                let help = ConsoleCommands.helpMessage(for: command, columns: width)
                page += ".SS \(escaped(name))\n" + preformatted(help)
            }
        }
        page += ".SH CONNECTING\n" + paragraphs(connecting)
        page += ".SH THE EMBEDDED CLUSTER\n" + paragraphs(embeddedCluster)
        page += ".SH EXIT STATUS\n" + preformatted(ExitStatus.documentation)
        page += ".SH RUNNING FROM CRON OR SYSTEMD\n" + paragraphs(unattended)
        page += ".SH ENVIRONMENT\n" + preformatted(environment)
        page += ".SH SEE ALSO\n" + paragraphs("psql(1), pg_restore(1), systemd.timer(5), crontab(5)")
        return page
    }

    /// Columns of the help put in the page: a man page's body starts 7 columns in.
    private static let width = 72

    private static let description = """
        Without a command, admin starts an interactive console on a terminal, and otherwise reads commands from \
        standard input, one per line (a line starting with # is a comment). With a command, or with -c or -f, it \
        runs those and exits.

        The store keeps the app's Firebase tree as SQL tables, one per node, so that the app's hand-kept copies \
        (like_count, poster, followers and following, the fan-out timeline, each member's chat copy) can be \
        checked and repaired as data. import and export read and write Firebase JSON exports of any size, \
        streaming, byte for byte; verify compares an export with the store; check finds where the copies \
        disagree, and the repairs put them right.
        """

    private static let connecting = """
        The database is --db (a libpq connection string or a postgresql:// URI), else $DATABASE_URL, else \
        libpq's PG* variables (PGHOST, PGSERVICE, ...), as psql finds its server. Keep a password out of --db, \
        which every user of the machine can read (ps, /proc): put it in ~/.pgpass (mode 0600), in the file \
        PGPASSFILE names, or in PGPASSWORD, or type it after -W.

        A database other than the embedded one changes schema only by the migrate command; admin refuses to \
        run against a Citus worker and names the coordinator.
        """

    private static let embeddedCluster = """
        With no database configured, admin runs a private PostgreSQL 15 cluster in --data-dir, $ADMIN_DATA_DIR \
        or a per-user data directory ($XDG_DATA_HOME/makestagram-admin, or /var/lib/makestagram-admin for \
        root), created and migrated on first use, reachable only through its own Unix socket, and stopped when \
        the last console using it leaves. It needs PostgreSQL 15's server binaries (package postgresql-15); as \
        root it runs the server as the postgres user.
        """

    private static let unattended = """
        check keeps its results in the database (--record), lets a known backlog pass (--fail-on new, --allow \
        CHECK=N), writes Prometheus metrics (--metrics-file), and tells "the data drifted" (exit 3) from "the \
        check could not run" (exit 2: no database; 1: any other failure). --quiet prints only the checks that \
        trip the run; errors go to standard error.

        The package installs admin-check.service and admin-check.timer, disabled: set DATABASE_URL (without a \
        password) and the check's options in /etc/default/admin-check, put the password in \
        /etc/admin-check/pgpass (owner root, mode 0600, one line host:port:database:user:password; the service \
        reads it as a credential), then run systemctl enable --now admin-check.timer. The timer runs the check \
        nightly at 03:15 as the system user admin-check; its metrics go to /var/lib/admin-check/admin_check.prom, \
        which any user (node_exporter's) can read; journalctl -u admin-check shows its output. Purging the \
        package stops and disables the timer and removes /var/lib/admin-check.

        It installs admin-mirror.service too, disabled: admin mirror of the live database, reconnecting when the \
        stream ends (exit 0) or the credential expired (6), stopping on a cancelled read (5) or a malformed \
        stream (65). Set DATABASE_URL, FIREBASE_URL (without its credential) and the mirror's options in \
        /etc/default/admin-mirror, put the credential in /etc/admin-mirror/firebase-token and the password in \
        /etc/admin-mirror/pgpass (owner root, mode 0600; read as credentials), then run systemctl enable --now \
        admin-mirror. It runs as the system user admin-mirror; its metrics go to \
        /var/lib/admin-mirror/admin_mirror.prom.
        """

    /// Every variable admin reads (a test finds each one the sources read here).
    static let environment = """
        DATABASE_URL     the database, when --db is not given
        PGHOST, PGPORT, PGDATABASE, PGUSER, PGSERVICE, PGPASSFILE, PGPASSWORD
                         libpq's settings, as psql reads them
        ADMIN_DATA_DIR   the embedded cluster's directory (default: /var/lib/makestagram-admin for root,
                         else $XDG_DATA_HOME/makestagram-admin, else ~/.local/share/makestagram-admin)
        XDG_DATA_HOME    see ADMIN_DATA_DIR
        ADMINRC          the startup file (default ~/.adminrc)
        ADMIN_HISTORY    the console's history file (default ~/.admin_history)
        ADMIN_PAGER      the pager for long output on a terminal (empty: none); else PAGER
        PAGER            the pager when ADMIN_PAGER is not set (default less -FRSX, else more)
        TMPDIR           where verify and sync sort a file and spill large values (default /tmp)
        NO_COLOR         no color in messages on a terminal (https://no-color.org)
        SHELL            the shell \\! starts when given no command (default /bin/sh)

        """

    /// The lines of `help` after the one that is `heading`, to the end (OPTIONS is the help's last section).
    private static func section(_ heading: String, of help: String) -> String {
        let lines = help.split(separator: "\n", omittingEmptySubsequences: false)
        guard let start = lines.firstIndex(where: { $0 == heading }) else { return help }
        return lines[(start + 1)...].joined(separator: "\n")
    }

    /// Text as filled paragraphs.
    private static func paragraphs(_ text: String) -> String {
        text.components(separatedBy: "\n\n").map { ".PP\n" + escaped($0) + "\n" }.joined()
    }

    /// Text as it is laid out, in a monospaced block.
    private static func preformatted(_ text: String) -> String {
        let body = text.split(separator: "\n", omittingEmptySubsequences: false).map { escaped(String($0)) }
        return ".PP\n.nf\n" + body.joined(separator: "\n").trimmingTrailingNewlines() + "\n.fi\n"
    }

    /// `text` safe in troff: backslashes as `\e`, hyphens as ASCII minus signs (options are typed as written),
    /// characters beyond ASCII as troff's own names for them (which render in the C locale too, where `man` has
    /// only ASCII to draw with), and a line that would start a request protected.
    private static func escaped(_ text: String) -> String {
        var result = ""
        for character in text.replacingOccurrences(of: "\\", with: "\\e").replacingOccurrences(of: "-", with: "\\-")
            .unicodeScalars
        {
            if character.isASCII {
                result.unicodeScalars.append(character)
            } else {
                result += troffNames[character] ?? "\\[u\(String(character.value, radix: 16, uppercase: true))]"
            }
        }
        return result.split(separator: "\n", omittingEmptySubsequences: false)
            .map { line in line.hasPrefix(".") || line.hasPrefix("'") ? "\\&" + line : String(line) }
            .joined(separator: "\n")
    }

    /// Characters beyond ASCII by the names troff renders in any locale (groff_char(7)).
    private static let troffNames: [Unicode.Scalar: String] = [
        "…": "...", "—": "\\(em", "–": "\\(en", "‘": "\\(oq", "’": "\\(cq", "“": "\\(lq", "”": "\\(rq",
        "→": "\\(->", "×": "\\(mu", "≤": "\\(<=", "≥": "\\(>=", "é": "\\['e]", "·": "\\(pc",
    ]
}

extension String {
    fileprivate func trimmingTrailingNewlines() -> String {
        var text = self
        while text.hasSuffix("\n") { text.removeLast() }
        return text
    }
}
