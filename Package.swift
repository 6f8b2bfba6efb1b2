// swift-tools-version:6.0
import PackageDescription

let strict: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "iap-gateway",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "iap-gateway", targets: ["iap-gateway"]),
        // Libraries for the fuzz package (Fuzz/Package.swift), which can depend on this package only through products.
        .library(name: "Canonical", targets: ["Canonical"]),
        .library(name: "WireJSON", targets: ["WireJSON"]),
        .library(name: "Crypto", targets: ["Crypto"]),
        .library(name: "HTTPClient", targets: ["HTTPClient"]),
        .library(name: "HTTPServer", targets: ["HTTPServer"]),
        .library(name: "SQLite", targets: ["SQLite"]),
        .library(name: "Zlib", targets: ["Zlib"]),
        .library(name: "Zstd", targets: ["Zstd"]),
        .library(name: "Postgres", targets: ["Postgres"]),
        .library(name: "Store", targets: ["Store"]),
        .library(name: "TeamDatabase", targets: ["TeamDatabase"]),
        .library(name: "V1Adapter", targets: ["V1Adapter"]),
        .library(name: "ApplePKI", targets: ["ApplePKI"]),
        .library(name: "V2Adapter", targets: ["V2Adapter"]),
        .library(name: "Receipts", targets: ["Receipts"]),
        .library(name: "TestPKI", targets: ["TestPKI"]),
        .library(name: "AppStoreConnect", targets: ["AppStoreConnect"]),
        .library(name: "ServiceKit", targets: ["ServiceKit"]),
        .library(name: "RefundRequests", targets: ["RefundRequests"]),
        .library(name: "ReceiptPath", targets: ["ReceiptPath"]),
        .library(name: "Gateway", targets: ["Gateway"]),
        .library(name: "Reports", targets: ["Reports"]),
        .library(name: "GatewayCLI", targets: ["GatewayCLI"]),
        .library(name: "Contracts", targets: ["Contracts"]),
    ],
    targets: [
        // Debian C libraries, each wrapped once (Sources/Crypto for OpenSSL).
        .systemLibrary(name: "COpenSSL", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(name: "CMicroHTTPD", pkgConfig: "libmicrohttpd", providers: [.apt(["libmicrohttpd-dev"])]),
        .systemLibrary(name: "CPostgres", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        .systemLibrary(name: "CZstd", pkgConfig: "libzstd", providers: [.apt(["libzstd-dev"])]),

        // Pure model: no imports beyond the standard library.
        .target(name: "Canonical", swiftSettings: strict),
        // Strict, fast JSON parser and a Decoder over its values (no imports).
        .target(name: "WireJSON", swiftSettings: strict),
        .target(name: "Crypto", dependencies: ["COpenSSL", "Threads"], swiftSettings: strict),
        .target(name: "HTTPClient", dependencies: ["CCurl", "Canonical", "Threads"], swiftSettings: strict),
        // Apple's PKI profile, once: the pinned roots (Apple's for every environment, extra ones for sandbox only)
        // and Apple's marker extensions, for the JWS verifier, the receipt signature policies and the test PKIs.
        .target(name: "ApplePKI", dependencies: ["Crypto"], swiftSettings: strict),
        // The ES256 bearer token of Apple's APIs (App Store Server API, App Store Connect API): header, claims, signing.
        .target(name: "BearerToken", dependencies: ["Canonical", "Crypto", "WireJSON"], swiftSettings: strict),
        // Result rows read by column name, strictly where the schema says NOT NULL: the one row protocol of both
        // database wrappers, and the migration runners' one schema-version query (no imports).
        .target(name: "Rows", swiftSettings: strict),
        .target(name: "SQLite", dependencies: ["CSQLite", "Rows"], swiftSettings: strict),
        .target(name: "Postgres", dependencies: ["CPostgres", "Rows"], swiftSettings: strict),
        // zlib streams with a bounded decompression: the SQLite store's values written before zstd, still read.
        .target(name: "Zlib", dependencies: ["CZlib"], swiftSettings: strict),
        // Zstandard frames with a bounded decompression: the SQLite store's compressed bodies and event JSON.
        .target(name: "Zstd", dependencies: ["CZstd"], swiftSettings: strict),
        // The one place an operating-system thread is started (pthreads).
        .target(name: "Threads", swiftSettings: strict),
        .target(name: "HTTPServer", dependencies: ["CMicroHTTPD", "Threads"], swiftSettings: strict),
        // The JSON Schemas and the OpenAPI document of schemas/, carried by the executable (docs/contracts.md).
        .target(name: "Contracts", dependencies: ["WireJSON"], swiftSettings: strict),
        // The notification rule: what a verified notification writes and queues, as a value (no I/O).
        .target(name: "Policy", dependencies: ["Canonical"], swiftSettings: strict),
        .testTarget(name: "PolicyTests", dependencies: ["Policy", "Canonical"], swiftSettings: strict),
        // Every table of the gateway behind one interface; all SQL of the gateway's own store lives here.
        .target(
            name: "Store",
            dependencies: [
                "Canonical", "Policy", "Crypto", "Rows", "SQLite", "Postgres", "WireJSON", "Threads", "Zlib", "Zstd",
            ],
            swiftSettings: strict
        ),
        // The database downstream's writers: the team's own tables (public schema, versions) in PostgreSQL or SQLite.
        .target(
            name: "TeamDatabase",
            dependencies: ["Canonical", "Rows", "SQLite", "Postgres", "WireJSON"],
            swiftSettings: strict
        ),
        .target(
            name: "V1Adapter",
            dependencies: ["Canonical", "Crypto", "WireJSON", "HTTPClient"],
            swiftSettings: strict
        ),
        .target(
            name: "V2Adapter",
            dependencies: ["Canonical", "Crypto", "ApplePKI", "WireJSON", "HTTPClient", "Threads", "BearerToken"],
            swiftSettings: strict
        ),
        // App receipts (PKCS#7) and iOS 6 transaction receipts read, their signature judged, verifyReceipt's `receipt`.
        .target(
            name: "Receipts",
            dependencies: ["Canonical", "Crypto", "ApplePKI", "WireJSON"],
            swiftSettings: strict
        ),
        // Test PKIs of Apple's profiles (the JWS chain, the receipt chains) made at run time, and receipts built and
        // signed with them: for the simulator, the benchmarks, the fuzz targets and the tests — never the product's
        // trust code (GatewayLayerTests checks who imports it).
        .target(name: "TestPKI", dependencies: ["Canonical", "Crypto", "ApplePKI", "Receipts"], swiftSettings: strict),
        // The App Store Connect API client (the switch between V1 and V2: the app's notification version).
        .target(
            name: "AppStoreConnect",
            dependencies: ["Canonical", "Crypto", "WireJSON", "HTTPClient", "BearerToken"],
            swiftSettings: strict
        ),
        // The simulated App Store: test PKI, lifecycles, paired V1/V2 traffic, fake Apple endpoints.
        .target(
            name: "Simulator",
            dependencies: [
                "Canonical", "Crypto", "WireJSON", "V1Adapter", "V2Adapter", "AppStoreConnect", "Receipts", "TestPKI",
            ],
            swiftSettings: strict
        ),
        // The comparison report's values (what `report` and `GET /admin/report` say), built by the Gateway's ledger and
        // rendered by Reports.
        .target(name: "ReportModel", dependencies: ["Canonical", "Store"], swiftSettings: strict),
        // The kernel every feature stands on: jobs and the service group, logs and metrics, the config reader, alerts,
        // the App Store Server API clients and their budget, trust-anchor loading, route tables. It knows no feature.
        .target(
            name: "ServiceKit",
            dependencies: [
                "Canonical", "Crypto", "WireJSON", "HTTPClient", "HTTPServer", "Threads", "V2Adapter", "Store",
            ],
            swiftSettings: strict
        ),
        // Answering Apple's refund requests: the consumption responder, its settings and the answers' rules.
        .target(
            name: "RefundRequests",
            dependencies: ["ServiceKit", "Canonical", "HTTPClient", "Policy", "Store", "V2Adapter", "WireJSON"],
            swiftSettings: strict
        ),
        // The receipt path: the gateway's own verifyReceipt endpoint, its customers' histories from the App Store Server
        // API, prefetch and the shadow comparisons.
        .target(
            name: "ReceiptPath",
            dependencies: [
                "ServiceKit", "Canonical", "Crypto", "HTTPClient", "HTTPServer", "Receipts", "Store", "V1Adapter",
                "V2Adapter", "WireJSON",
            ],
            swiftSettings: strict
        ),
        // The service: authenticate, normalize, journal, deliver, compare; its HTTP endpoints and admin API.
        .target(
            name: "Gateway",
            dependencies: [
                "ServiceKit", "RefundRequests", "ReceiptPath", "Canonical", "Policy", "ReportModel", "Crypto",
                "WireJSON",
                "HTTPClient", "V1Adapter", "V2Adapter", "AppStoreConnect", "Store", "TeamDatabase", "HTTPServer",
                "Threads",
                "Contracts",
            ],
            swiftSettings: strict
        ),
        // The comparison report as a table, JSON and one HTML page (the CLI's `report`, the admin API through `serve`).
        .target(name: "Reports", dependencies: ["ReportModel", "Canonical", "WireJSON"], swiftSettings: strict),
        // The simulated App Store at work: its fake Apple behind an HTTP server, its lifecycles played against a gateway.
        .target(
            name: "SimulatorServer",
            dependencies: [
                "Simulator", "Gateway", "ServiceKit", "Canonical", "WireJSON", "V1Adapter", "V2Adapter", "HTTPClient",
                "HTTPServer",
            ],
            swiftSettings: strict
        ),
        // The benchmarks of `iap-gateway bench` (verify, receipts, ingest, soak, flood, fsync): each runs and returns its
        // result.
        .target(
            name: "Benchmarks",
            dependencies: [
                "Gateway", "ServiceKit", "ReceiptPath", "Store", "Policy", "Postgres", "Canonical", "Crypto",
                "WireJSON", "HTTPClient",
                "HTTPServer",
                "V2Adapter", "Threads", "Receipts", "TestPKI",
            ],
            swiftSettings: strict
        ),
        // The commands, one file each (Sources/GatewayCLI/*Command.swift): flags, wiring, output.
        .target(
            name: "GatewayCLI",
            dependencies: [
                "Gateway", "ServiceKit", "ReceiptPath", "Reports", "ReportModel", "Simulator", "SimulatorServer",
                "Benchmarks",
                "Store", "Canonical",
                "Crypto", "WireJSON", "HTTPClient", "HTTPServer",
                "V1Adapter", "V2Adapter", "AppStoreConnect", "Receipts", "Threads", "Contracts",
            ],
            swiftSettings: strict
        ),
        .executableTarget(name: "iap-gateway", dependencies: ["GatewayCLI"], swiftSettings: strict),

        .target(
            name: "TestSupport",
            dependencies: ["Canonical", "Crypto", "HTTPClient", "V2Adapter", "Postgres", "Threads", "TestPKI"],
            path: "Tests/TestSupport",
            swiftSettings: strict
        ),
        .testTarget(name: "CanonicalTests", dependencies: ["Canonical", "TestSupport"], swiftSettings: strict),
        .testTarget(name: "WireJSONTests", dependencies: ["WireJSON"], swiftSettings: strict),
        // The contracts against schemas/, the codes and vocabularies they list, and what they bundle into.
        .testTarget(
            name: "ContractsTests",
            dependencies: [
                "Contracts", "Gateway", "RefundRequests", "Canonical", "Store", "Crypto", "WireJSON", "TestSupport",
                "HTTPServer",
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "HTTPClientTests",
            dependencies: ["HTTPClient", "Canonical", "TestSupport"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "V1AdapterTests",
            dependencies: ["V1Adapter", "Canonical", "Crypto", "HTTPClient", "WireJSON", "TestSupport"],
            swiftSettings: strict
        ),
        .testTarget(name: "CryptoTests", dependencies: ["Crypto", "TestSupport", "TestPKI"], swiftSettings: strict),
        .testTarget(name: "ApplePKITests", dependencies: ["ApplePKI", "Crypto", "TestPKI"], swiftSettings: strict),
        .testTarget(name: "BearerTokenTests", dependencies: ["BearerToken", "Crypto"], swiftSettings: strict),
        .testTarget(
            name: "ReceiptsTests",
            dependencies: ["Receipts", "Canonical", "Crypto", "WireJSON", "TestSupport", "TestPKI"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "V2AdapterTests",
            dependencies: [
                "V2Adapter", "Canonical", "Crypto", "HTTPClient", "Simulator", "AppStoreConnect", "WireJSON",
                "TestSupport", "Threads",
                "SimulatorTestSupport", "TestPKI",
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "AppStoreConnectTests",
            dependencies: [
                "AppStoreConnect", "Canonical", "Crypto", "HTTPClient", "WireJSON", "Simulator", "TestSupport",
                "SimulatorTestSupport",
            ],
            swiftSettings: strict
        ),
        .target(
            name: "SimulatorTestSupport",
            dependencies: ["Simulator", "V2Adapter", "HTTPClient", "TestSupport"],
            path: "Tests/SimulatorTestSupport",
            swiftSettings: strict
        ),
        .testTarget(
            name: "SimulatorTests",
            dependencies: [
                "Simulator", "Canonical", "Crypto", "V1Adapter", "V2Adapter", "AppStoreConnect", "WireJSON",
                "TestSupport",
                "SimulatorTestSupport",
            ],
            swiftSettings: strict
        ),
        .testTarget(name: "SQLiteTests", dependencies: ["SQLite", "Rows"], swiftSettings: strict),
        // Against a real server when IAPGW_TEST_DATABASE_URL is set (scripts/with-postgres), skipped otherwise.
        .testTarget(name: "PostgresTests", dependencies: ["Postgres", "Rows", "TestSupport"], swiftSettings: strict),
        .testTarget(
            name: "HTTPServerTests",
            dependencies: ["HTTPServer", "HTTPClient", "TestSupport", "Threads"],
            swiftSettings: strict
        ),
        .target(
            name: "StoreTestSupport",
            dependencies: ["Store", "Canonical", "Policy", "SQLite", "TestSupport"],
            path: "Tests/StoreTestSupport",
            swiftSettings: strict
        ),
        // The store contract against each implementation: SQLite always, PostgreSQL when IAPGW_TEST_DATABASE_URL is set.
        .testTarget(
            name: "StoreTests",
            dependencies: [
                "Store", "StoreTestSupport", "Canonical", "Policy", "Postgres", "Rows", "SQLite", "Zlib", "Zstd",
                "TestSupport", "WireJSON",
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "ServiceKitTests",
            dependencies: ["ServiceKit", "Store", "TestSupport", "HTTPServer"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "GatewayTests",
            dependencies: [
                "Gateway", "ServiceKit", "RefundRequests", "ReceiptPath", "Reports", "ReportModel", "Store",
                "TeamDatabase",
                "StoreTestSupport", "SQLite", "Postgres", "HTTPServer", "Crypto", "HTTPClient", "V1Adapter",
                "V2Adapter",
                "AppStoreConnect", "Canonical", "Policy", "WireJSON", "TestSupport", "Simulator",
                "SimulatorTestSupport", "Receipts", "TestPKI", "Contracts",
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "ReportsTests",
            dependencies: ["Reports", "ReportModel", "Gateway", "ServiceKit", "Store", "WireJSON", "TestSupport"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "GatewayCLITests",
            dependencies: [
                "GatewayCLI", "Benchmarks", "SimulatorServer", "Gateway", "ServiceKit", "RefundRequests", "ReceiptPath",
                "Reports",
                "ReportModel",
                "Store",
                "StoreTestSupport",
                "Simulator", "SQLite", "Postgres", "HTTPServer", "Crypto", "HTTPClient", "V1Adapter",
                "V2Adapter", "AppStoreConnect", "Canonical", "WireJSON", "TestSupport", "Receipts",
                "SimulatorTestSupport", "TestPKI",
            ],
            swiftSettings: strict
        ),
    ]
)
