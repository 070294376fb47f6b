import Foundation

/// Text from the data made safe and measurable for a terminal: control characters shown as escapes, not obeyed,
/// and widths counted in terminal columns as psql counts them (wcwidth), not in characters.
enum TerminalText {
    /// `text` with every character a terminal would obey written as an escape instead: C0 controls (`\n`, `\t`,
    /// `\r` and `\u001b` for the rest), DEL, C1 controls (`\u009b`, which some terminals read as ESC [), bidi
    /// embeddings, overrides and isolates, and line and paragraph separators. A username that holds `ESC ]0;…`
    /// then shows as text instead of retitling the operator's terminal. `keepingNewlines` leaves `\n` and `\t`
    /// alone, for messages of several lines (libpq indents its second lines with a tab).
    static func escaped(_ text: String, keepingNewlines: Bool = false) -> String {
        let isKept = { (scalar: Unicode.Scalar) in keepingNewlines && (scalar == "\n" || scalar == "\t") }
        guard text.unicodeScalars.contains(where: { needsEscape($0) && !isKept($0) }) else { return text }
        var result = ""
        result.reserveCapacity(text.utf8.count + 8)
        for scalar in text.unicodeScalars {
            guard needsEscape(scalar), !isKept(scalar) else {
                result.unicodeScalars.append(scalar)
                continue
            }
            switch scalar {
            case "\n": result += "\\n"
            case "\t": result += "\\t"
            case "\r": result += "\\r"
            default:
                let hex = String(scalar.value, radix: 16)
                result += "\\u" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
            }
        }
        return result
    }

    /// Whether a terminal would act on `scalar` rather than show it.
    static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F: true
        case 0x202A...0x202E, 0x2066...0x2069, 0x2028, 0x2029: true
        default: false
        }
    }

    /// How many terminal columns `text` takes: wide (East Asian wide and fullwidth, most emoji) characters two,
    /// combining marks, format characters and variation selectors none, the rest one. Escape first: a control
    /// character has no width to count.
    static func width(_ text: String) -> Int {
        if text.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) { return text.utf8.count }
        return text.unicodeScalars.reduce(0) { $0 + width(of: $1) }
    }

    /// The columns one character takes.
    static func width(of scalar: Unicode.Scalar) -> Int {
        let value = scalar.value
        if value < 0x7F { return value < 0x20 ? 0 : 1 }
        switch scalar.properties.generalCategory {
        case .nonspacingMark, .enclosingMark, .format: return 0
        default: break
        }
        if (0xFE00...0xFE0F).contains(value) || value == 0x200D { return 0 }
        return isWide(value) ? 2 : 1
    }

    /// East Asian wide and fullwidth ranges, and emoji shown wide (after Markus Kuhn's wcwidth).
    private static func isWide(_ value: UInt32) -> Bool {
        switch value {
        case 0x1100...0x115F, 0x231A...0x231B, 0x2329...0x232A, 0x23E9...0x23EC, 0x23F0, 0x23F3, 0x25FD...0x25FE,
            0x2614...0x2615, 0x2648...0x2653, 0x267F, 0x2693, 0x26A1, 0x26AA...0x26AB, 0x26BD...0x26BE,
            0x26C4...0x26C5, 0x26CE, 0x26D4, 0x26EA, 0x26F2...0x26F3, 0x26F5, 0x26FA, 0x26FD, 0x2705,
            0x270A...0x270B, 0x2728, 0x274C, 0x274E, 0x2753...0x2755, 0x2757, 0x2795...0x2797, 0x27B0, 0x27BF,
            0x2B1B...0x2B1C, 0x2B50, 0x2B55, 0x2E80...0x303E, 0x3041...0x33FF, 0x3400...0x4DBF, 0x4E00...0x9FFF,
            0xA000...0xA4CF, 0xA960...0xA97F, 0xAC00...0xD7A3, 0xF900...0xFAFF, 0xFE10...0xFE19, 0xFE30...0xFE6F,
            0xFF00...0xFF60, 0xFFE0...0xFFE6, 0x16FE0...0x16FE4, 0x17000...0x18AFF, 0x1B000...0x1B2FF,
            0x1F004, 0x1F0CF, 0x1F18E, 0x1F191...0x1F19A, 0x1F200...0x1F251, 0x1F300...0x1F64F, 0x1F680...0x1F6FF,
            0x1F7E0...0x1F7EB, 0x1F90C...0x1F9FF, 0x1FA70...0x1FAFF, 0x20000...0x2FFFD, 0x30000...0x3FFFD:
            return true
        default:
            return false
        }
    }

    /// `text` cut to at most `columns` columns, with `…` at the end when it was cut.
    static func truncated(_ text: String, toWidth columns: Int) -> String {
        guard width(text) > columns else { return text }
        guard columns > 0 else { return "" }
        var result = ""
        var used = 0
        for scalar in text.unicodeScalars {
            let next = width(of: scalar)
            if used + next > columns - 1 { break }
            result.unicodeScalars.append(scalar)
            used += next
        }
        return result + "…"
    }

    /// The terminal's size when `descriptor` is one: columns and rows.
    static func size(of descriptor: Int32) -> (columns: Int, rows: Int)? {
        var size = winsize()
        guard isatty(descriptor) == 1, ioctl(descriptor, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 else {
            return nil
        }
        return (Int(size.ws_col), Int(size.ws_row))
    }
}
