import FuzzTargets
import Foundation

#if FUZZING
/// libFuzzer's entry point (built by Fuzz/run.sh with -sanitize=fuzzer and -DFUZZING).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    FuzzTargets.run(UnsafeBufferPointer(start: data, count: size))
    return 0
}
#else
/// Without libFuzzer: runs the targets on the given files and directories (a corpus, or crashes to reproduce).
@main
struct ReplayCorpus {
    static func main() throws {
        var count = 0
        for argument in CommandLine.arguments.dropFirst() {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: argument, isDirectory: &isDirectory) else { continue }
            let files = isDirectory.boolValue
                ? try FileManager.default.contentsOfDirectory(atPath: argument).sorted().map { argument + "/" + $0 }
                : [argument]
            for file in files {
                let data = try Data(contentsOf: URL(fileURLWithPath: file))
                data.withUnsafeBytes { FuzzTargets.run($0.bindMemory(to: UInt8.self)) }
                count += 1
            }
        }
        print("ran \(count) inputs without a failure")
    }
}
#endif
