import Foundation
import FuzzTargets

#if FUZZING
    import CFuzzer
#endif

/// Built by Fuzz/run.sh (-sanitize=fuzzer, -DFUZZING): hands the targets to libFuzzer's driver, which takes
/// libFuzzer's usual arguments; with `FUZZ_SEEDS=DIR` it first writes the structural seeds that fit libFuzzer's
/// size cap there. Built plainly (`swift run Fuzz FILE|DIR…`): runs the targets on the given files and
/// directories, a corpus or a crash to reproduce. `FUZZ_TARGET=name` runs one target (see `FuzzTargets`).
@main
struct FuzzMain {
    static func main() throws {
        if let directory = ProcessInfo.processInfo.environment["FUZZ_SEEDS"] {
            try writeSeeds(to: directory)
        }
        #if FUZZING
            var argc = CommandLine.argc
            var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
            exit(
                LLVMFuzzerRunDriver(&argc, &argv) { data, size in
                    FuzzTargets.run(UnsafeBufferPointer(start: data, count: size))
                    return 0
                })
        #else
            var count = 0
            for argument in CommandLine.arguments.dropFirst() {
                var isDirectory: ObjCBool = false
                guard FileManager.default.fileExists(atPath: argument, isDirectory: &isDirectory) else { continue }
                let files =
                    isDirectory.boolValue
                    ? try FileManager.default.contentsOfDirectory(atPath: argument).sorted().map { argument + "/" + $0 }
                    : [argument]
                for file in files {
                    let data = try Data(contentsOf: URL(fileURLWithPath: file))
                    data.withUnsafeBytes { FuzzTargets.run($0.bindMemory(to: UInt8.self)) }
                    count += 1
                }
            }
            print("ran \(count) inputs without a failure")
        #endif
    }

    /// The structural seeds, scaled down to at most a megabyte each (the strings past 10 MB do not fit and are
    /// left to the smoke run), as files in `directory`.
    static func writeSeeds(to directory: String) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        for seed in FuzzTargets.structuralSeeds(scale: 0.02) where seed.bytes.count <= 1 << 20 {
            try Data(seed.bytes).write(to: URL(fileURLWithPath: directory + "/structural-" + seed.name))
        }
    }
}
