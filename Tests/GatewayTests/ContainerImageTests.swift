import Foundation
import TestSupport
import Testing

@testable import Gateway

/// The image's packaging as the repository holds it (Containerfile, .containerignore, config/container.json;
/// docs/operations.md, "Running the image"): no secret file of the checkout in the build context, the admin listener
/// on the container's loopback. `scripts/container-test` checks the same on a built image.
@Suite struct ContainerImageTests {
    static let repository = Fixtures.root.deletingLastPathComponent()

    static func text(_ path: String) throws -> String {
        try String(decoding: Data(contentsOf: repository.appending(path: path)), as: UTF8.self)
    }

    /// `.containerignore` read as podman and docker read it: one pattern a line (`#` comments), `*` within one path
    /// element, `**/` any number of folders, `!` letting back in; the last pattern that matches a path or one of its
    /// folders decides.
    struct IgnoreFile {
        let rules: [(pattern: Regex<AnyRegexOutput>, lets: Bool)]

        init(_ text: String) throws {
            rules = try text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
                .filter { !$0.isEmpty && !$0.hasPrefix("#") }
                .map { line in
                    let lets = line.hasPrefix("!")
                    var regex = ""
                    var rest = Substring(lets ? line.dropFirst() : Substring(line))
                    while let c = rest.first {
                        if rest.hasPrefix("**/") {
                            regex += "(.*/)?"
                            rest = rest.dropFirst(3)
                            continue
                        }
                        switch c {
                        case "*": regex += "[^/]*"
                        case "?": regex += "[^/]"
                        case ".", "+", "(", ")", "[", "]", "{", "}", "^", "$", "|", "\\": regex += "\\" + String(c)
                        default: regex.append(c)
                        }
                        rest = rest.dropFirst()
                    }
                    return (try Regex(regex), lets)
                }
        }

        /// Whether `path` (relative to the context, `/`-separated) reaches the build.
        func admits(_ path: String) -> Bool {
            let elements = path.split(separator: "/")
            let prefixes = (1...elements.count).map { elements.prefix($0).joined(separator: "/") }
            var admitted = true
            for rule in rules where prefixes.contains(where: { (try? rule.pattern.wholeMatch(in: $0)) != nil }) {
                admitted = rule.lets
            }
            return admitted
        }
    }

    @Test func theBuildContextHoldsNoSecretFileAndEveryFileTheBuildNeeds() throws {
        let ignore = try IgnoreFile(Self.text(".containerignore"))
        // What a checkout may hold beside the sources: the README's env file, Apple's keys, PEM keys, a store.
        for secret in [
            "iapgw.env", ".env", ".env.production", "secrets/prod.env", "AuthKey_ABC123.p8", "Sources/AuthKey.p8",
            "Tests/GatewayTests/key.pem", "Sources/Gateway/tls.key", "config/iapgw.env", "config/server.key",
            "Fixtures/test-pki/root.key.pem", ".pgpass", "Sources/.netrc", "keys/store.p12", "gateway.db",
            "data/gateway.db", ".git/config", ".build/release/iap-gateway", "Tests/.build/x",
        ] {
            let admitted = ignore.admits(secret)
            #expect(!admitted, "\(secret) reaches the build context")
        }
        // What the build stage compiles (the manifest names the test targets) and the image copies.
        var needed = ["Package.swift", "config/container.json"]
        for folder in ["Sources", "Tests"] {
            let root = Self.repository.appending(path: folder)
            let files = FileManager.default.enumerator(at: root, includingPropertiesForKeys: [.isRegularFileKey])
            while let url = files?.nextObject() as? URL {
                guard (try? url.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true else { continue }
                needed.append(folder + "/" + url.path().dropFirst(root.path().count).drop { $0 == "/" })
            }
        }
        #expect(needed.count > 500)
        let kept = needed.filter { !ignore.admits($0) }
        #expect(kept.isEmpty, "kept out of the build context: \(kept.prefix(10))")
        // Nothing else of the checkout.
        for other in [
            "README.md", "Fixtures/v2/notif-did-renew-sandbox-2025.json", "docs/operations.md", "scripts/test",
        ] {
            let admitted = ignore.admits(other)
            #expect(!admitted, "\(other) reaches the build context")
        }
    }

    @Test func theImagesAdminListenerIsOnTheContainersLoopback() throws {
        let config = try GatewayConfig.load(path: Self.repository.appending(path: "config/container.json").path())
        #expect(
            config.adminListen.hasPrefix("127.0.0.1:"),
            "every pod of the network would reach \(config.adminListen)"
        )
        #expect(config.listen.hasPrefix("0.0.0.0:"))
        let port = try #require(config.listen.split(separator: ":").last)
        let containerfile = try Self.text("Containerfile")
        let exposed = containerfile.split(separator: "\n").filter { $0.hasPrefix("EXPOSE ") }
        #expect(exposed == ["EXPOSE \(port)"], "only the public port")
        #expect(containerfile.contains("http://127.0.0.1:\(port)/healthz"), "the HEALTHCHECK asks the public listener")
    }
}
