import Foundation
import FuzzTargets
import PostgresTestSupport
import Testing
import TreeTestSupport

/// CI's short run of the fuzz targets (Fuzz/run.sh runs them under libFuzzer for as long as one likes): every
/// seed of the committed corpus, the structural seeds past a fuzzer's size cap (deep, wide, long, bombs), then
/// inputs mutated from the seeds by a seeded generator, so a failure reproduces.
///
/// `FUZZ_SECONDS=N swift test --filter FuzzSmoke` mutates for N seconds instead of a fixed count (a long run
/// without libFuzzer); `FUZZ_SEED` picks another seed than CI's.
@Suite("Fuzz smoke run")
struct FuzzSmokeTests {
    static let corpus = Repository.url("Fuzz/corpus")
    static let environment = ProcessInfo.processInfo.environment

    @Test func theStructuralSeedsPassEveryTarget() throws {
        // A fifth of the corpus's nesting and widths in CI (60,000 levels, 20,000 keys: far past every limit still),
        // whole in a long run.
        for seed in FuzzTargets.structuralSeeds(scale: Self.environment["FUZZ_SECONDS"] == nil ? 0.2 : 1) {
            let started = ContinuousClock.now
            seed.bytes.withUnsafeBufferPointer(FuzzTargets.run)
            // A seed that takes long is a reader whose cost grows faster than its input; CI would only time out.
            #expect(ContinuousClock.now - started < .seconds(60), "\(seed.name)")
        }
    }

    @Test func theSeedsAndThousandsOfMutationsOfThemPassEveryTarget() throws {
        let seeds = try FileManager.default.contentsOfDirectory(atPath: Self.corpus.path).sorted().map {
            Array(try Data(contentsOf: Self.corpus.appendingPathComponent($0)))
        }
        #expect(seeds.count >= 40)
        for seed in seeds { seed.withUnsafeBufferPointer(FuzzTargets.run) }

        let seed = Self.environment["FUZZ_SEED"].flatMap { UInt64($0) } ?? 2026
        let deadline = Self.environment["FUZZ_SECONDS"].flatMap { Double($0) }.map {
            ContinuousClock.now + .seconds($0)
        }
        var random = SeededGenerator(state: seed)
        let alphabet =
            Array(#"{}[]:,"\ .-+eE0123456789truefalsn$#/\u00é😀"#.utf8) + [0x00, 0x1F, 0x7F, 0xC0, 0xED, 0xFF]
        var tried = 0
        while deadline.map({ ContinuousClock.now < $0 }) ?? (tried < 4_000) {
            var input = seeds[Int(random.next() % UInt64(seeds.count))]
            for _ in 0..<(1 + Int(random.next() % 8)) {
                let position = input.isEmpty ? 0 : Int(random.next() % UInt64(input.count))
                switch random.next() % 6 {
                case 0 where !input.isEmpty: input[position] = alphabet[Int(random.next() % UInt64(alphabet.count))]
                case 1: input.insert(alphabet[Int(random.next() % UInt64(alphabet.count))], at: position)
                case 2 where !input.isEmpty: input.remove(at: position)
                case 3: input = Array(input.prefix(position))
                case 4:
                    // Nest what is there, past Firebase's levels now and then.
                    let levels = Int(random.next() % 40)
                    input =
                        Array(repeating: UInt8(ascii: "["), count: levels) + input
                        + Array(repeating: UInt8(ascii: "]"), count: levels)
                default:
                    // Splice in a piece of another seed.
                    let other = seeds[Int(random.next() % UInt64(seeds.count))]
                    let start = other.isEmpty ? 0 : Int(random.next() % UInt64(other.count))
                    input.insert(contentsOf: other[start..<min(other.count, start + 64)], at: position)
                }
            }
            input.withUnsafeBufferPointer(FuzzTargets.run)
            tried += 1
        }
        if deadline != nil { print("fuzz smoke run: \(tried) inputs from seed \(seed), no failure") }
    }
}
