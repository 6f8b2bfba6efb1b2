/// Text an unauthenticated body *claims* (a bundle id, an environment, a notification type) or that an error derived
/// from it (a decoder's member path): anyone can make it a megabyte long. Wherever such text is logged or stored
/// outside the raw body it is clipped to ``maxBytes`` UTF-8 bytes (docs/threat-model.md, "disk and log exhaustion").
public enum ClaimedText {
    /// The longest claimed string kept, in UTF-8 bytes.
    public static let maxBytes = 200

    /// `text` cut at a character boundary to at most `limit` UTF-8 bytes; a cut string ends in "…" (counted).
    public static func clip(_ text: String, limit: Int = maxBytes) -> String {
        guard text.utf8.count > limit else { return text }
        let ellipsis = "…"
        let budget = max(0, limit - ellipsis.utf8.count)
        var used = 0
        var kept = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            let width = String(scalar).utf8.count
            guard used + width <= budget else { break }
            used += width
            kept.append(scalar)
        }
        return String(kept) + ellipsis
    }

    /// ``clip(_:limit:)`` of an optional.
    public static func clip(_ text: String?, limit: Int = maxBytes) -> String? { text.map { clip($0, limit: limit) } }
}
