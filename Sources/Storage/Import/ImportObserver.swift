/// What a long import tells its caller as it goes, and asks: the rejects, the rows so far, the steps after the
/// reading, and whether to stop. With `reopening` (several sessions), `onReject` and `isCancelled` may be called
/// from other threads.
public struct ImportObserver {
    /// Hears each rejected value as it is met (to write a rejects file); the import aborts once more than
    /// `ImportOptions.maximumRejects` were rejected.
    public var onReject: (ImportReject) throws -> Void
    /// Hears the number of rows mapped so far, every few thousand rows.
    public var onRows: (Int) -> Void
    /// Asked as often; true stops the import (rolled back, as a cancelled statement): during COPY the server's
    /// answer to a cancel request is only read at the end, so the reading must stop by itself.
    public var isCancelled: @Sendable () -> Bool
    /// Hears each step that follows the reading (storing likes, building indexes: seconds on a large store).
    public var onStep: (ImportStep) -> Void

    /// An observer; each part defaults to hearing nothing (and never stopping).
    public init(
        onReject: @escaping (ImportReject) throws -> Void = { _ in }, onRows: @escaping (Int) -> Void = { _ in },
        isCancelled: @escaping @Sendable () -> Bool = { false }, onStep: @escaping (ImportStep) -> Void = { _ in }
    ) {
        self.onReject = onReject
        self.onRows = onRows
        self.isCancelled = isCancelled
        self.onStep = onStep
    }
}
