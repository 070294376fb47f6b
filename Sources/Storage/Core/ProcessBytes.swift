/// Copies of values made once and never freed, read by every thread without reference counting: the schema's
/// descriptions that import and export consult for every row, a few hundred bytes for the whole process. An array
/// there would be retained and released per row, on a cache line every session's thread shares.
enum ProcessBytes {
    /// A copy of `elements` that lives as long as the process.
    static func keep<T>(_ elements: [T]) -> UnsafeBufferPointer<T> {
        let copy = UnsafeMutableBufferPointer<T>.allocate(capacity: elements.count)
        _ = copy.initialize(from: elements)
        return UnsafeBufferPointer(copy)
    }
}
