import Foundation
import Storage

/// A one-line progress display on stderr: bytes done of the total, rate and time left, redrawn at most ten
/// times a second and erased at the end; or the step the work is at (an index build, ANALYZE), whose clock ticks
/// each second however long the step takes. Only on a terminal, and not with --quiet: pipes, files and cron get
/// none of it.
///
/// `@unchecked Sendable`: the step's clock is redrawn from a timer's thread; `lock` guards every field it reads.
final class ProgressBar: @unchecked Sendable {
    /// What the bar counts.
    enum Unit {
        case bytes, rows
    }

    private let label: String
    private let total: Int?
    private let unit: Unit
    private let started = Date()
    private var lastDrawn = Date.distantPast
    private var done = 0
    /// Rows done, for work counted in bytes that also reports rows (an import).
    private var rows = 0
    /// The step shown last, until the bar is drawn over it: the ticker redraws it with the time so far.
    private var step: String?
    /// Redraws `step` each second, from its first `show` to `finish`.
    private var ticker: DispatchSourceTimer?
    private let lock = NSLock()

    /// A bar for `label`, or nil when stderr is not a terminal or the session is quiet. `total` is the byte count
    /// when it is known.
    init?(_ label: String, total: Int?, unit: Unit = .bytes, session: Session) {
        guard session.diagnostics.isTerminal, !session.isQuiet else { return nil }
        self.label = label
        self.total = total.flatMap { $0 > 0 ? $0 : nil }
        self.unit = unit
    }

    /// Sets the count done (for work that reports totals rather than increments) and redraws when it is time.
    func update(done count: Int) {
        lock.withLock { moveOn(to: count) }
    }

    /// Adds `count` bytes done and redraws when it is time.
    func advance(by count: Int) {
        lock.withLock { moveOn(to: done + count) }
    }

    /// Sets the count done to `count` unless it is that far already, and redraws when it is time.
    func advance(toAtLeast count: Int) {
        lock.withLock { if count > done { moveOn(to: count) } }
    }

    /// Sets the count done, and redraws when it is time; `lock` is held.
    private func moveOn(to count: Int) {
        done = count
        let now = Date()
        guard now.timeIntervalSince(lastDrawn) >= 0.1 else { return }
        lastDrawn = now
        step = nil
        draw(elapsed: now.timeIntervalSince(started))
    }

    /// Sets the rows done alongside the bytes; the bar then shows rows per second too.
    func update(rows count: Int) {
        lock.withLock { rows = count }
    }

    /// Shows which step of the work is running, with the time so far, which goes on ticking until the bar is drawn
    /// again or finished.
    func show(_ step: String) {
        lock.withLock {
            self.step = step
            drawStep()
            guard ticker == nil else { return }
            let timer = DispatchSource.makeTimerSource(queue: .global())
            timer.schedule(deadline: .now() + 1, repeating: 1)
            timer.setEventHandler { [weak self] in self?.tick() }
            timer.resume()
            ticker = timer
        }
    }

    /// Erases the bar; call it before printing results (again is harmless).
    func finish() {
        lock.withLock {
            ticker?.cancel()
            ticker = nil
            step = nil
            guard lastDrawn != .distantPast else { return }
            lastDrawn = .distantPast
            FileHandle.standardError.write(Data("\r\u{1B}[K".utf8))
        }
    }

    deinit { ticker?.cancel() }

    /// The ticker's second: the step again, if it is still what the line shows.
    private func tick() {
        lock.withLock {
            guard step != nil, Date().timeIntervalSince(lastDrawn) >= 0.5 else { return }
            drawStep()
        }
    }

    private func drawStep() {
        guard let step else { return }
        lastDrawn = Date()
        let elapsed = Int(lastDrawn.timeIntervalSince(started))
        FileHandle.standardError.write(
            Data("\r\u{1B}[K\(label)  \(step)  \(elapsed / 60):\(String(format: "%02d", elapsed % 60))".utf8))
    }

    private func draw(elapsed: TimeInterval) {
        let rate = elapsed > 0 ? Double(done) / elapsed : 0
        var line = "\(label)  "
        if let total {
            // A total that was estimated (generate) may be passed: stay short of 100 % until done.
            let fraction = min(0.99, Double(done) / Double(total))
            let width = 24
            let filled = Int(fraction * Double(width))
            line += "[" + String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled) + "] "
            line += String(format: "%3.0f%%  ", fraction * 100) + "\(amount(done)) of \(amount(total))"
            if rate > 0 {
                line += "  \(amount(Int(rate)))/s"
                if rows > 0 { line += "  \(Int(Double(rows) / elapsed)) rows/s" }
                line += "  ETA \(Self.duration(Double(max(0, total - done)) / rate))"
            }
        } else {
            line += amount(done) + (rate > 0 ? "  \(amount(Int(rate)))/s" : "")
        }
        FileHandle.standardError.write(Data("\r\u{1B}[K\(line)".utf8))
    }

    private func amount(_ count: Int) -> String {
        switch unit {
        case .bytes: String(format: "%.1f MB", Double(count) / 1_000_000)
        case .rows: "\(count) rows"
        }
    }

    private static func duration(_ seconds: Double) -> String {
        guard seconds.isFinite else { return "?" }
        let whole = Int(seconds.rounded(.up))
        return String(format: "%d:%02d", whole / 60, whole % 60)
    }
}

/// A byte source that reports each read to a progress bar; the end (no bytes) is not progress, and redrawing the
/// bar for it would draw over a step the bar showed meanwhile.
struct ProgressSource: ByteSource {
    var base: any ByteSource
    let bar: ProgressBar

    mutating func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        let count = try base.read(into: buffer)
        if count > 0 { bar.advance(by: count) }
        return count
    }

    mutating func skip(_ count: Int) throws -> Int {
        let skipped = try base.skip(count)
        if skipped > 0 { bar.advance(by: skipped) }
        return skipped
    }

    var skipsWithoutReading: Bool { base.skipsWithoutReading }
}

/// The bytes of one file that several readers read at once (a parallel import's sessions, each decompressing
/// the same .gz), shown on one bar: how far every reader still reading has got, the least of their offsets,
/// never going back (a reader that starts over, to read a node again, holds the bar where it is until it passes
/// it). `@unchecked Sendable`: `lock` guards the offsets, which the readers' threads move.
final class SharedFileProgress: @unchecked Sendable {
    private let bar: ProgressBar
    private let lock = NSLock()
    /// Each reader still reading, by number, and its offset.
    private var offsets: [Int: Int] = [:]
    private var readers = 0

    init(bar: ProgressBar) { self.bar = bar }

    /// A source over `file` that moves the bar with the other readers'.
    func reader(of file: some ByteSource) -> some ByteSource {
        let number = lock.withLock {
            readers += 1
            offsets[readers] = 0
            return readers
        }
        return Reader(base: file, progress: self, number: number)
    }

    private func moved(_ number: Int, to offset: Int?) {
        let least = lock.withLock {
            offsets[number] = offset
            return offsets.values.min()
        }
        if let least { bar.advance(toAtLeast: least) }
    }

    /// One reader: tells its offset after each read, and that it stopped at the end or when it is dropped.
    private final class Reader: ByteSource {
        private var base: any ByteSource
        private let progress: SharedFileProgress
        private let number: Int
        private var offset = 0

        init(base: some ByteSource, progress: SharedFileProgress, number: Int) {
            self.base = base
            self.progress = progress
            self.number = number
        }

        deinit { progress.moved(number, to: nil) }

        func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
            let count = try base.read(into: buffer)
            offset += count
            progress.moved(number, to: count > 0 ? offset : nil)
            return count
        }

        func skip(_ count: Int) throws -> Int {
            let skipped = try base.skip(count)
            offset += skipped
            progress.moved(number, to: skipped > 0 ? offset : nil)
            return skipped
        }

        var skipsWithoutReading: Bool { base.skipsWithoutReading }
    }
}
