// swift-tools-version:6.0
// libFuzzer targets for every parser of outside bytes (see README.md). Build only through scripts/fuzz, which adds
// -sanitize=fuzzer,address to every module, the root package's included.
import PackageDescription

let strict: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

/// One libFuzzer executable: its source defines `LLVMFuzzerTestOneInput` and a `@main` that hands the process to
/// libFuzzer's driver (`runLibFuzzer`): SwiftPM's `--defsym main=<module>_main` keeps libFuzzer's own `main` out.
func fuzzTarget(_ name: String, _ dependencies: [Target.Dependency]) -> Target {
    .executableTarget(
        name: "fuzz-\(name)",
        dependencies: ["FuzzSupport"] + dependencies,
        path: "Sources/fuzz-\(name)",
        swiftSettings: strict
    )
}

let package = Package(
    name: "iap-gateway-fuzz",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "iap-gateway", path: "..")],
    targets: [
        .target(name: "CFuzzDriver"),
        .target(
            name: "FuzzSupport",
            dependencies: [
                "CFuzzDriver",
                .product(name: "Crypto", package: "iap-gateway"), .product(name: "WireJSON", package: "iap-gateway"),
            ],
            swiftSettings: strict
        ),
        fuzzTarget("json", [.product(name: "WireJSON", package: "iap-gateway")]),
        fuzzTarget(
            "v2",
            [
                .product(name: "V2Adapter", package: "iap-gateway"), .product(name: "Crypto", package: "iap-gateway"),
                .product(name: "Canonical", package: "iap-gateway"),
            ]
        ),
        fuzzTarget(
            "v1",
            [
                .product(name: "V1Adapter", package: "iap-gateway"), .product(name: "WireJSON", package: "iap-gateway"),
                .product(name: "Canonical", package: "iap-gateway"),
            ]
        ),
        fuzzTarget(
            "receipt",
            [
                .product(name: "Receipts", package: "iap-gateway"), .product(name: "Crypto", package: "iap-gateway"),
                .product(name: "WireJSON", package: "iap-gateway"), .product(name: "TestPKI", package: "iap-gateway"),
            ]
        ),
        fuzzTarget("redact", [.product(name: "WireJSON", package: "iap-gateway")]),
        fuzzTarget("deflate", [.product(name: "Zlib", package: "iap-gateway")]),
        fuzzTarget("zstd", [.product(name: "Zstd", package: "iap-gateway")]),
        fuzzTarget(
            "config",
            [
                .product(name: "Gateway", package: "iap-gateway"),
                .product(name: "RefundRequests", package: "iap-gateway"),
            ]
        ),
        fuzzTarget("time", [.product(name: "Canonical", package: "iap-gateway")]),
        fuzzTarget(
            "http",
            [
                .product(name: "Gateway", package: "iap-gateway"), .product(name: "Reports", package: "iap-gateway"),
                .product(name: "HTTPClient", package: "iap-gateway"),
            ]
        ),
    ]
)
