import Foundation
import PackagePlugin

/// Embeds the package's `sql/NNNN_*.sql` migrations into the target that uses this plugin, so an installed
/// `admin` finds its schema from any working directory without shipping resource bundles beside it.
@main
struct EmbedMigrations: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let sqlDirectory = context.package.directoryURL.appending(path: "sql")
        let files = try FileManager.default
            .contentsOfDirectory(at: sqlDirectory, includingPropertiesForKeys: nil)
            .filter { $0.pathExtension == "sql" }
            .sorted { $0.lastPathComponent < $1.lastPathComponent }
        let output = context.pluginWorkDirectoryURL.appending(path: "EmbeddedMigrations.swift")
        return [
            .buildCommand(
                displayName: "Embedding the SQL migrations of sql/",
                executable: try context.tool(named: "EmbedSQL").url,
                arguments: [output.path, sqlDirectory.path],
                // The directory too, so that adding or removing a migration runs the command again.
                inputFiles: files + [sqlDirectory],
                outputFiles: [output]
            )
        ]
    }
}
