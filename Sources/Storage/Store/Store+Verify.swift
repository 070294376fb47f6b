import FirebaseTree
import Foundation

extension Store {
    /// Compares the node at `path` with a Firebase JSON export of that node, under the Realtime Database's
    /// semantics (see `TreeComparison`), and reports where they differ. Read-only, from one snapshot: the store's
    /// side is its export (a whole tree's over a session a core, as `exportTree` reads it), streamed from another
    /// thread while the source is read, so memory stays bounded whatever the size of either.
    ///
    /// `open` gives the export's bytes from its start. The comparison reads them in one pass while each
    /// object's keys come in RTDB order (as the Firebase console writes them); at the first that does not, it
    /// calls `open` again and sorts the export first (`TreeSorter`, with temporary files in the options'
    /// `temporaryDirectory`), then compares from the start; `sortingFirst` skips the one-pass attempt for an
    /// export known to be out of order (and `open` is called once). See `VerifyOptions` for the rest.
    ///
    /// ```swift
    /// let report = try store.verify(opening: { MemorySource(json) }, options: VerifyOptions(at: ["users"]))
    /// ```
    public func verify(opening open: () throws -> any ByteSource, options: VerifyOptions = VerifyOptions())
        throws -> VerifyReport
    {
        try verification.verify(opening: open, options: options)
    }

    /// `verify(opening:…)` of a source that can be read only once (stdin, a pipe): what it reads is kept in a
    /// temporary file in case the export must be sorted and so read again.
    public func verify(source: some ByteSource, options: VerifyOptions = VerifyOptions()) throws -> VerifyReport {
        try verification.verify(source: source, options: options)
    }
}
