import ArgumentParser

/// A console command: parsed by swift-argument-parser from argv or a REPL line, then run against the session.
protocol ConsoleCommand: ParsableCommand {
    /// Does the command's work, printing data to `session.output`.
    func run(in session: Session) throws
}

/// The root of every console command; one parser for argv, `-c`, `-f`, stdin and the REPL.
struct ConsoleCommands: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "admin",
        subcommands: CommandGroup.all.flatMap(\.commands))
}

/// Commands grouped as `help` lists them.
struct CommandGroup {
    var title: String
    var commands: [any ConsoleCommand.Type]

    static let all: [CommandGroup] = [
        CommandGroup(title: "Status and schema", commands: [Status.self, Migrate.self, Vacuum.self, Distribute.self]),
        CommandGroup(
            title: "Import and export",
            commands: [
                Import.self, Sync.self, MirrorCommand.self, Export.self, Verify.self, Inspect.self, Get.self,
                Generate.self,
            ]),
        CommandGroup(title: "Firebase's writes", commands: [SetCommand.self, Update.self, Push.self, Remove.self]),
        CommandGroup(
            title: "Users, posts and follows",
            commands: [
                UserCommand.self, Users.self, PostCommand.self, Posts.self, Follow.self, Unfollow.self, Like.self,
                Unlike.self, Timeline.self, Feed.self,
            ]),
        CommandGroup(title: "Chats", commands: [ChatCommand.self, Chats.self, Messages.self]),
        CommandGroup(
            title: "Integrity",
            commands: [
                Check.self, Backfill.self, Denormalize.self, Rehash.self, RepairCommand.self,
            ]),
        CommandGroup(title: "Auth accounts", commands: [Auth.self]),
        CommandGroup(
            title: "Console",
            commands: [Help.self, SettingsCommand.self, Timing.self, WatchCommand.self, Psql.self, Quit.self]),
    ]
}
