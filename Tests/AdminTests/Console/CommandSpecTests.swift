import Testing

@testable import Admin

/// What the console reads of each command from the parser's description: names, options, subcommands.
@Suite("Command descriptions")
struct CommandSpecTests {
    /// A command described alone, as a process that runs one command reads it, is the command as the description
    /// of every command has it, under each of its names and aliases.
    @Test func aCommandDescribedAloneIsTheRootsOwn() throws {
        for command in CommandGroup.all.flatMap(\.commands) {
            for name in [command._commandName] + command.configuration.aliases {
                let alone = try #require(CommandSpec.command(named: name), "\(name)")
                #expect(alone == CommandSpec.root.subcommand(named: name), "\(name)")
            }
        }
        #expect(CommandSpec.command(named: "no-such-command") == nil)
    }

    /// `admin`'s own options written after the command go before it, with their values; the command's options,
    /// arguments that look like options (push IDs) and everything after `--` stay where they were.
    @Test func globalOptionsAfterTheCommandGoFirst() {
        let lifted = CommandSpec.liftingGlobalOptions
        #expect(lifted(["-q", "get", "/users"]) == ["-q", "get", "/users"])
        #expect(lifted(["--db", "host=x", "get", "/users"]) == ["--db", "host=x", "get", "/users"])
        #expect(lifted(["get", "/users", "-q"]) == ["-q", "get", "/users"])
        #expect(
            lifted(["check", "--db", "host=x", "-q", "--wait", "5"]) == [
                "--db", "host=x", "-q", "check", "--wait", "5",
            ])
        #expect(
            lifted(["get", "/users", "--limit-to-first", "2", "-q"]) == [
                "-q", "get", "/users", "--limit-to-first", "2",
            ])
        #expect(
            lifted(["chat", "send", "--from", "a", "--to", "b", "-q", "hi"]) == [
                "-q", "chat", "send", "--from", "a", "--to", "b", "hi",
            ])
        #expect(lifted(["get", "/posts/-NxQ3bH0Jb2Sc5HWq5nQ"]) == ["get", "/posts/-NxQ3bH0Jb2Sc5HWq5nQ"])
        #expect(lifted(["set", "/a", "--", "-q"]) == ["set", "/a", "--", "-q"])
        #expect(lifted(["no-such-command", "-q"]) == ["no-such-command", "-q"])
        // psql's own -q and -c, and a watched command's options, are theirs.
        #expect(lifted(["psql", "-q", "-c", "SELECT 1"]) == ["psql", "-q", "-c", "SELECT 1"])
        #expect(lifted(["watch", "5", "status", "-q"]) == ["watch", "5", "status", "-q"])
    }

    /// The same on a script line: `-q` after a command is quiet for it, except where the rest of the line is
    /// another program's (psql) or another command's (watch, which lifts its command's own).
    @Test func quietAfterACommandOnAScriptLine() {
        #expect(Dispatcher.liftingQuiet(["status", "-q"]) == (["status"], true))
        #expect(Dispatcher.liftingQuiet(["check", "--quiet"]) == (["check", "--quiet"], false))
        #expect(Dispatcher.liftingQuiet(["set", "/a", "--", "-q"]) == (["set", "/a", "--", "-q"], false))
        #expect(Dispatcher.liftingQuiet(["psql", "-q", "-c", "x"]) == (["psql", "-q", "-c", "x"], false))
        #expect(
            Dispatcher.liftingQuiet(["get", "/a", "--order-by", "-q", "-q"]) == (
                ["get", "/a", "--order-by", "-q"], true
            ))
    }
}
