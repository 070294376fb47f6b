import Foundation
import FuzzTargets
import PostgresTestSupport
import Testing
import TreeTestSupport

/// CI's short run of the fuzz targets (Fuzz/run.sh runs them under libFuzzer for as long as one likes): every
/// seed of the committed corpus, then inputs mutated from them by a seeded generator, so a failure reproduces.
@Suite("Fuzz smoke run")
struct FuzzSmokeTests {
    static let corpus = Repository.url("Fuzz/corpus")

    @Test func theSeedsAndThousandsOfMutationsOfThemPassEveryTarget() throws {
        let seeds = try FileManager.default.contentsOfDirectory(atPath: Self.corpus.path).sorted().map {
            Array(try Data(contentsOf: Self.corpus.appendingPathComponent($0)))
        }
        #expect(seeds.count >= 40)
        for seed in seeds { seed.withUnsafeBufferPointer(FuzzTargets.run) }

        var random = SeededGenerator(state: 2026)
        let alphabet =
            Array(#"{}[]:,"\ .-+eE0123456789truefalsn$#/\u00é😀"#.utf8) + [0x00, 0x1F, 0x7F, 0xC0, 0xED, 0xFF]
        for _ in 0..<4_000 {
            var input = seeds[Int(random.next() % UInt64(seeds.count))]
            for _ in 0..<(1 + Int(random.next() % 8)) {
                let position = input.isEmpty ? 0 : Int(random.next() % UInt64(input.count))
                switch random.next() % 5 {
                case 0 where !input.isEmpty: input[position] = alphabet[Int(random.next() % UInt64(alphabet.count))]
                case 1: input.insert(alphabet[Int(random.next() % UInt64(alphabet.count))], at: position)
                case 2 where !input.isEmpty: input.remove(at: position)
                case 3: input = Array(input.prefix(position))
                default:
                    // Splice in a piece of another seed.
                    let other = seeds[Int(random.next() % UInt64(seeds.count))]
                    let start = other.isEmpty ? 0 : Int(random.next() % UInt64(other.count))
                    input.insert(contentsOf: other[start..<min(other.count, start + 64)], at: position)
                }
            }
            input.withUnsafeBufferPointer(FuzzTargets.run)
        }
    }
}
