/// verifyReceipt's `status`, named once for everything that reads or writes one: the client of Apple's verifyReceipt,
/// the gateway's own verifyReceipt answers, the simulator's fake. Apple's meanings (its `status` of
/// `responseBody`); a value Apple does not list is kept as it came.
public struct VerifyReceiptStatus: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }
    public init(_ rawValue: Int) { self.rawValue = rawValue }

    /// The receipt is valid (for an auto-renewable subscription: one that is active, or expired and told so below).
    public static let ok = Self(0)
    /// The request was not an HTTP POST of verifyReceipt's JSON object: nothing could be read.
    public static let unreadable = Self(21000)
    /// `receipt-data` is malformed, or the service had a temporary issue reading it.
    public static let malformed = Self(21002)
    /// The receipt could not be authenticated.
    public static let notAuthenticated = Self(21003)
    /// The shared secret given is not the app's.
    public static let wrongSecret = Self(21004)
    /// The receipt server is unavailable now: try again.
    public static let unavailable = Self(21005)
    /// Valid, but the subscription has expired (iOS 6 transaction receipts only; the answer still decodes).
    public static let expired = Self(21006)
    /// A sandbox receipt sent to production: send it to the sandbox.
    public static let sandboxReceipt = Self(21007)
    /// A production receipt sent to the sandbox: send it to production.
    public static let productionReceipt = Self(21008)
    /// An internal data access error: try again.
    public static let internalError = Self(21009)
    /// The account is gone or could not be authorized (the gateway: no app of its own, or an environment it does
    /// not take).
    public static let notAuthorized = Self(21010)

    /// 21100–21199: internal data access errors, each one retryable only as the answer's `is-retryable` says.
    public var isInternalDataAccessError: Bool { (21100...21199).contains(rawValue) }

    /// Apple's "try again later": 21005 and 21009 always; 21100–21199 when the answer says `is-retryable`.
    public func isRetryable(answerSays isRetryable: Bool = false) -> Bool {
        self == .unavailable || self == .internalError || (isInternalDataAccessError && isRetryable)
    }

    public var description: String { String(rawValue) }
}
