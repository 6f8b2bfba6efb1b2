import Synchronization

/// How many `/verifyReceipt` requests are being answered at once, in all and per client address
/// (``ReceiptSettings/maxInFlight``, ``ReceiptSettings/maxInFlightPerAddress``): a request beyond either bound is not
/// taken (the endpoint answers `21005` with `is-retryable`, as Apple does when it is busy), so a flood of receipts —
/// from one address or many — holds a bounded number of tasks and outgoing transfer slots, never a handler thread
/// (docs/architecture.md, "The receipt path").
package final class ReceiptAdmission: Sendable {
    /// Why a request was not taken.
    package enum Refusal: String, Error {
        /// ``ReceiptSettings/maxInFlight`` requests are being answered.
        case busy
        /// Its address has ``ReceiptSettings/maxInFlightPerAddress`` requests being answered.
        case addressBusy = "address_busy"
    }

    /// A request taken: hand it back once answered (``release()``), exactly once.
    package struct Ticket: Sendable {
        fileprivate let address: String
    }

    private struct State {
        var total = 0
        /// By client address; an address with nothing in flight has no entry.
        var byAddress: [String: Int] = [:]
    }

    package let limit: Int
    /// 0: no bound per address (behind a reverse proxy every request has the proxy's address).
    package let perAddressLimit: Int
    /// Told the number in flight after each change, under the lock (so that a gauge never keeps a stale value).
    package let onChange: @Sendable (Int) -> Void
    private let state = Mutex(State())

    package init(limit: Int, perAddressLimit: Int, onChange: @escaping @Sendable (Int) -> Void = { _ in }) {
        (self.limit, self.perAddressLimit, self.onChange) = (max(1, limit), max(0, perAddressLimit), onChange)
    }

    /// Takes a request from `address`, or says why not.
    package func admit(from address: String) -> Result<Ticket, Refusal> {
        state.withLock { s in
            guard s.total < limit else { return .failure(.busy) }
            if perAddressLimit > 0 {
                let mine = s.byAddress[address, default: 0]
                guard mine < perAddressLimit else { return .failure(.addressBusy) }
                s.byAddress[address] = mine + 1
            }
            s.total += 1
            onChange(s.total)
            return .success(Ticket(address: address))
        }
    }

    package func release(_ ticket: Ticket) {
        state.withLock { s in
            s.total -= 1
            onChange(s.total)
            guard perAddressLimit > 0 else { return }
            let left = s.byAddress[ticket.address, default: 0] - 1
            s.byAddress[ticket.address] = left > 0 ? left : nil
        }
    }

    /// Requests being answered now.
    package var inFlight: Int { state.withLock { $0.total } }
}
