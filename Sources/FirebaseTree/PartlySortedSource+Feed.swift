import Foundation
import Synchronization

extension PartlySortedSource {
    /// Thrown by a `PartlySortedSource` reading from a `Feed` whose scan found that sorting object by object will
    /// not do: the caller reads the document another way (sorted whole, or after the token scan).
    public struct ScanGaveUp: Error, Sendable {
        /// Why.
        public let reason: String
        /// Whether the byte scan could not settle the document (a key with an escape, one too long, a document
        /// that is not one object or array), which the token scan of `outOfOrderObjects(in:)` can.
        public let isUnsettled: Bool
    }

    /// The out-of-order objects of a document as a byte scan (`outOfOrderObjects(opening:)`'s) finds them on a
    /// thread of its own, for a `PartlySortedSource` reading the same document from another source meanwhile: the
    /// reader waits only until the scan has passed the end of the top-level node it is in, where the objects
    /// inside that node are known, so the scan costs the comparison next to nothing in time.
    ///
    /// The scan gives up (the reader throws `ScanGaveUp`) where the document's own keys are out of order, more
    /// than `maximumObjects` objects are, or the byte scan cannot settle it.
    public final class Feed: @unchecked Sendable {
        private let condition = NSCondition()
        /// The objects found in the top-level nodes the scan has passed, in order; those before `passed` are read.
        private var objects: [OutOfOrderObject] = []
        private var passed = 0
        /// Bytes before this offset are settled: every out-of-order object in them is in `objects`.
        private var settled = 0
        private var isDone = false
        private var gaveUp: ScanGaveUp?
        private var failure: (any Error)?
        private var isRunning = true
        private let stopFlag = StopFlag()

        /// Starts scanning `source`, the document from its first byte. A top-level node whose keys leave order only
        /// in a tail of its children (a script's appended keys) is read with the tail's children sorted apart and
        /// put in their places, rather than sorted whole, while the tails found hold at most `tailLimit` bytes.
        public init(scanning source: some ByteSource, maximumObjects: Int = 100_000, tailLimit: Int = 4 << 20) {
            let scan = KeyOrderScan(source: Stoppable(base: source, flag: stopFlag), maximumObjects: maximumObjects)
            scan.tailLimit = tailLimit
            nonisolated(unsafe) let unsafeScan = scan
            Thread { [self] in run(unsafeScan) }.start()
        }

        /// How many objects out of order the scan has found so far (all of them once the reader has ended).
        public var objectCount: Int { condition.withLock { objects.count } }

        /// Stops the scan if it still runs, and waits until its thread has ended.
        public func stop() {
            stopFlag.isSet.store(true, ordering: .relaxed)
            condition.withLock {
                while isRunning { condition.wait() }
            }
        }

        /// The first object at or after `offset` to sort, and how far from `offset` the document may be read as it
        /// is (up to that object, or to where the scan is settled); waits until the scan is settled past `offset`.
        func next(at offset: Int) throws -> (object: OutOfOrderObject?, limit: Int) {
            try condition.withLock {
                while !isDone && gaveUp == nil && failure == nil && settled <= offset { condition.wait() }
                if let gaveUp { throw gaveUp }
                if let failure { throw failure }
                while passed < objects.count, objects[passed].range.upperBound <= offset { passed += 1 }
                if passed < objects.count, objects[passed].range.lowerBound < (isDone ? Int.max : settled) {
                    return (objects[passed], objects[passed].range.lowerBound)
                }
                return (nil, isDone ? Int.max : settled)
            }
        }

        /// Passes the object `next(at:)` returned, whose tail the reader merges as it reads on inside it (the
        /// feed's copy of the tail goes).
        func pass() {
            condition.withLock {
                objects[passed].tail = nil
                passed += 1
            }
        }

        private func run(_ scan: KeyOrderScan) {
            var published = 0
            scan.onTopLevelEnd = { [self] found, offset in
                condition.withLock {
                    objects += found[published...]
                    settled = offset
                    condition.broadcast()
                }
                published = found.count
            }
            let outcome = Result { try scan.run() }
            condition.withLock {
                switch outcome {
                case .success(.found(let found, _, _)):
                    objects += found[published...]
                    isDone = true
                case .success(.tooMany):
                    gaveUp = ScanGaveUp(
                        reason: "more objects out of order than are sorted one by one", isUnsettled: false)
                case .success(.rootOutOfOrder):
                    gaveUp = ScanGaveUp(reason: "the document's own keys are out of order", isUnsettled: false)
                case .success(.unsettled):
                    gaveUp = ScanGaveUp(
                        reason: "the byte scan leaves the document to the token scan", isUnsettled: true)
                case .failure(let error):
                    failure = error
                }
                isRunning = false
                condition.broadcast()
            }
        }
    }

    /// Set when a feed is stopped.
    private final class StopFlag: Sendable {
        let isSet = Atomic<Bool>(false)
    }

    /// A source whose reads throw once the feed that scans it has been stopped.
    private struct Stoppable: ByteSource {
        var base: any ByteSource
        let flag: StopFlag

        struct Stopped: Error {}

        mutating func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
            if flag.isSet.load(ordering: .relaxed) { throw Stopped() }
            return try base.read(into: buffer)
        }
    }
}
