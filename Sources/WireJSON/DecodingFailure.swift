/// Why a body did not decode, reduced to what a log line or an error reason may show: the member path and the
/// decoder's words about the mismatch, never the value. The one wording of the V1 and V2 adapters, the App Store
/// Server API client and the App Store Connect client.
public enum DecodingFailure {
    /// `path: words` for a `DecodingError` (the coding path joined with `.`, empty for the top level), `invalid` for
    /// any other error: the adapters' and the App Store Server API client's wording.
    public static func describe(_ error: any Error) -> String {
        guard let (path, words) = parts(of: error) else { return "invalid" }
        return path + ": " + words
    }

    /// The App Store Connect client's wording, which parses Apple's bytes itself: `not JSON: …` for a
    /// ``JSONParseError``; for a `DecodingError` the path and `: ` only when there is a path, and the decoder's words
    /// kept to `limit` bytes of printable ASCII (``Clip/printable(_:_:)``); `invalid` for any other error.
    public static func describe(_ error: any Error, clippedTo limit: Int) -> String {
        if let e = error as? JSONParseError { return "not JSON: \(e.message)" }
        guard let (path, words) = parts(of: error) else { return "invalid" }
        return (path.isEmpty ? "" : path + ": ") + Clip.printable(words, limit)
    }

    /// The coding path and the debug description of a `DecodingError`; nil for any other error.
    private static func parts(of error: any Error) -> (path: String, words: String)? {
        guard let e = error as? DecodingError else { return nil }
        switch e {
        case .typeMismatch(_, let c), .valueNotFound(_, let c), .keyNotFound(_, let c), .dataCorrupted(let c):
            return (c.codingPath.map(\.stringValue).joined(separator: "."), c.debugDescription)
        @unknown default:
            return nil
        }
    }
}
