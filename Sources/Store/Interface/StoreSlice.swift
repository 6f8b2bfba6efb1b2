/// The store seen through some slices of its interface (docs/architecture.md, "The store's interface"): a part of the
/// service holds the slice it needs — `StoreSlice<any OutboxTransaction & JournalTransaction>`, say — and its
/// transactions offer that and nothing else. The same transactions as ``GatewayStore``'s, the same commits.
public struct StoreSlice<Transaction>: Sendable {
    /// The whole store, for what every part may ask of it (whether it is shared, closing).
    public let store: any GatewayStore
    private let view: @Sendable (any StoreTransaction) -> Transaction

    /// `view` narrows a transaction to the slice: `{ $0 }`, with the slice's type given.
    public init(_ store: any GatewayStore, _ view: @escaping @Sendable (any StoreTransaction) -> Transaction) {
        (self.store, self.view) = (store, view)
    }

    /// ``GatewayStore/write(_:)-(@Sendable(any StoreTransaction)->T)`` through the slice.
    public func write<T: Sendable>(_ body: @escaping @Sendable (Transaction) throws -> T) async throws -> T {
        try await store.write(narrow(body))
    }

    /// The blocking write, for server threads.
    public func write<T: Sendable>(bytes: Int = 0, _ body: @escaping @Sendable (Transaction) throws -> T) throws -> T {
        try store.write(bytes: bytes, narrow(body))
    }

    /// A read on one consistent snapshot, off Swift's cooperative pool.
    public func read<T: Sendable>(_ body: @escaping @Sendable (Transaction) throws -> T) async throws -> T {
        try await store.read(narrow(body))
    }

    /// A blocking read.
    public func read<T>(_ body: (Transaction) throws -> T) throws -> T {
        try store.read { tx in try body(view(tx)) }
    }

    /// One statement as one read (``GatewayStore/readStatement(_:)``).
    public func readStatement<T: Sendable>(_ body: @escaping @Sendable (Transaction) throws -> T) async throws -> T {
        try await store.readStatement(narrow(body))
    }

    /// `body`, for code that hands the store a closure of its own (a job's outcome written with the next claim).
    public func narrow<T>(
        _ body: @escaping @Sendable (Transaction) throws -> T
    ) -> @Sendable (any StoreTransaction) throws -> T {
        { [view] tx in try body(view(tx)) }
    }
}
