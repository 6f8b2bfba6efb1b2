internal import Gateway
internal import ServiceKit
internal import Store

/// The store as a one-shot command (`replay`, `subscription`, `quarantine list`, `report`, `cutover`) uses it: the
/// operator actions, and the store they run on. No secrets are needed to open it.
struct MaintenanceStore {
    let operations: Operations
    let store: any GatewayStore
}

/// Opens the config's store for a one-shot command, runs `body`, and always closes the store again (committing
/// what is queued) however `body` ends. A store that does not exist is a config error (exit 2), never created.
func withStore<T>(_ config: GatewayConfig, _ body: (MaintenanceStore) throws -> T) throws -> T {
    let (operations, store): (Operations, any GatewayStore)
    do {
        (operations, store) = try GatewayService.maintenance(config: config, now: WallClock.wallMillis)
    } catch let missing as StoreNotFound {
        throw CommandError.usage("config: \(missing)")
    }
    defer { store.close() }
    return try body(MaintenanceStore(operations: operations, store: store))
}

/// The whole service — its pipeline, the V1 secrets, the App Store Server API clients — for a one-shot command
/// (`quarantine replay`, `backfill`, `test-notification`), not listening, its log on standard error so that standard
/// output holds the command's result alone. Always shut down, however `body` ends. A service the config cannot
/// build (a secret's variable unset, say) is a config error: exit 2.
func withService<T>(_ config: GatewayConfig, _ body: (GatewayService) async throws -> T) async throws -> T {
    let service: GatewayService
    do { service = try GatewayService(config: config, dependencies: .command()) } catch {
        throw CommandError.usage("config: \(error)")
    }
    do {
        let result = try await body(service)
        await service.shutdown()
        return result
    } catch {
        await service.shutdown()
        throw error
    }
}
