/// The stable member hash of a two-person chat, which replaces the app's `uid1.hashValue ^ uid2.hashValue`
/// (seeded per launch, so never recomputable): 64-bit FNV-1a over the two uids' UTF-8, ordered byte-wise,
/// joined by a 0x00 byte. The SQL function `chat_member_hash` of migration 0003 computes the same value.
public enum ChatMemberHash {
    /// The hash of the pair, whichever order the uids come in.
    public static func stable(_ a: String, _ b: String) -> Int64 {
        var (lo, hi) = (Array(a.utf8), Array(b.utf8))
        if hi.lexicographicallyPrecedes(lo) { swap(&lo, &hi) }
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in lo + [0] + hi {
            hash ^= UInt64(byte)
            hash &*= 0x100_0000_01b3
        }
        return Int64(bitPattern: hash)
    }

    /// The hash as the tree stores it in `memberHash`: a signed decimal string.
    public static func stableText(_ a: String, _ b: String) -> String {
        String(stable(a, b))
    }
}
