import Canonical
import Testing

@Suite struct AppStoreEnvironmentTests {
    @Test(arguments: [
        ("PROD", AppStoreEnvironment.production), ("Production", .production), ("production", .production),
        ("PRODUCTION", .production), ("prod", .production),
        ("Sandbox", .sandbox), ("sandbox", .sandbox), ("SANDBOX", .sandbox), ("ProductionSandbox", .sandbox),
        ("Xcode", .xcode), ("xcode", .xcode),
        ("LocalTesting", .localTesting), ("local_testing", .localTesting),
    ])
    func normalizesEveryAppleSpelling(_ apple: String, _ expected: AppStoreEnvironment) {
        #expect(AppStoreEnvironment(appleValue: apple) == expected)
    }

    @Test(arguments: ["", "Staging", "Prod ", " Sandbox", "Local Testing", "Sand-box", "production\n"])
    func returnsNilForAnythingElse(_ value: String) {
        #expect(AppStoreEnvironment(appleValue: value) == nil)
    }

    @Test func wireStringsMatchTheDesign() {
        #expect(
            [AppStoreEnvironment.production, .sandbox, .xcode, .localTesting].map(\.rawValue)
                == ["production", "sandbox", "xcode", "local_testing"]
        )
    }

    @Test func ourOwnWireStringsNormalizeToThemselves() {
        for environment in [AppStoreEnvironment.production, .sandbox, .xcode, .localTesting] {
            #expect(AppStoreEnvironment(appleValue: environment.rawValue) == environment)
        }
    }
}
