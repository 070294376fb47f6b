// Comparing large texts in tests.

/// Where two texts first differ, with some context, so that a failing comparison of large exports stays readable.
public func firstDifference(_ a: String, _ b: String) -> String {
    let x = Array(a.utf8), y = Array(b.utf8)
    var index = 0
    while index < min(x.count, y.count), x[index] == y[index] { index += 1 }
    if index == x.count, index == y.count { return "identical" }
    let start = max(0, index - 80)
    func excerpt(_ bytes: [UInt8]) -> String {
        String(decoding: bytes[start..<min(bytes.count, index + 80)], as: UTF8.self)
    }
    return "differ at byte \(index):\n  got      \(excerpt(x))\n  expected \(excerpt(y))"
}
