import ArgumentParser
import Storage

/// `rehash chats`: replace the app's unreproducible member hashes with the stable one.
struct Rehash: ConsoleCommand {
    static let configuration = CommandConfiguration(
        commandName: "rehash",
        abstract: "Give every two-person chat the stable member hash.",
        discussion: """
            Examples:
              rehash chats
            """,
        subcommands: [RehashChats.self])

    func run(in session: Session) throws {
        throw ConsoleError(.usage, "rehash what? chats (see help rehash)")
    }
}

/// `rehash chats`.
struct RehashChats: ConsoleCommand {
    static let configuration = CommandConfiguration(
        commandName: "chats",
        abstract: "Set every two-person chat copy's memberHash to the stable member hash.",
        discussion: """
            The app hashed members with Swift's per-launch-seeded hashValue, which cannot be recomputed. The stable \
            hash is 64-bit FNV-1a over the two uids (UTF-8, byte-wise order, joined by a 0x00 byte) as a signed \
            decimal; chats the console creates carry it. One transaction, or with --batch-size one per batch of \
            chats. Fixes the chat_hash_legacy check.

            Examples:
              rehash chats
              rehash chats --dry-run
            """)

    @OptionGroup var batch: RepairBatchOption
    @OptionGroup var options: RepairRunOptions

    func run(in session: Session) throws {
        try options.run(.chatHashes, in: session, options: RepairOptions(batchSize: batch.batchSize))
    }
}
