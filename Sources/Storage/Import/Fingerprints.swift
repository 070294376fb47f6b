import Foundation

/// A set of 64-bit hashes in 8 bytes each (a `Set` takes 11 to 21, and twice that while it grows): the newest
/// in a small `Set`, the rest in sorted runs searched by bisection. Runs of equal size merge, up to
/// `maximumRunLength`, so that a lookup searches a few runs and a merge never needs more than 32 MB at once:
/// 1.75 million keys of one unsorted object take 14 MB, not 48.
struct Fingerprints {
    static let recentLimit = 1 << 16
    static let maximumRunLength = 1 << 21

    private var recent: Set<UInt64> = []
    private var runs: [[UInt64]] = []
    private(set) var count = 0

    /// Adds `hash`; false when it was there.
    mutating func insert(_ hash: UInt64) -> Bool {
        if recent.contains(hash) || runs.contains(where: { Self.contains(hash, in: $0) }) { return false }
        recent.insert(hash)
        count += 1
        if recent.count == Self.recentLimit {
            runs.append(recent.sorted())
            recent = []
            while runs.count >= 2, runs[runs.count - 1].count == runs[runs.count - 2].count,
                runs[runs.count - 1].count < Self.maximumRunLength
            {
                let last = runs.removeLast()
                runs[runs.count - 1] = Self.merged(runs[runs.count - 1], last)
            }
        }
        return true
    }

    private static func contains(_ hash: UInt64, in run: [UInt64]) -> Bool {
        var low = 0, high = run.count
        while low < high {
            let middle = (low + high) / 2
            if run[middle] < hash { low = middle + 1 } else { high = middle }
        }
        return low < run.count && run[low] == hash
    }

    private static func merged(_ a: [UInt64], _ b: [UInt64]) -> [UInt64] {
        var result: [UInt64] = []
        result.reserveCapacity(a.count + b.count)
        var i = 0, j = 0
        while i < a.count, j < b.count {
            if a[i] <= b[j] {
                result.append(a[i])
                i += 1
            } else {
                result.append(b[j])
                j += 1
            }
        }
        result.append(contentsOf: a[i...])
        result.append(contentsOf: b[j...])
        return result
    }
}
