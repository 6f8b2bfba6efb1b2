internal import Gateway
internal import HTTPServer
internal import ServiceKit
internal import WireJSON

/// `iap-gateway receive`: a minimal downstream for trying the gateway — prints every delivery it gets as one JSON
/// line (path, webhook id, whether the Standard Webhooks signature verifies, `source: v2` for the V1 shape of a V2
/// notification, the body) and answers 200.
public enum ReceiveCommand: Command {
    static let name = "receive"
    static let usage = """
          iap-gateway receive [--listen HOST:PORT] [--secret-env VAR]
              A demo downstream: prints each delivery (and whether its webhook signature verifies) as a JSON line.
        """

    static func run(_ arguments: [String]) async throws -> Int32 {
        let a = try Arguments(arguments, valueFlags: ["listen", "secret-env"])
        _ = try a.positionals(atMost: 0, for: name)
        return await run(
            listen: a.value("listen") ?? "127.0.0.1:9000",
            secretEnv: a.value("secret-env"),
            environment: ProcessEnvironment.variables
        )
    }

    /// Returns the process exit status.
    public static func run(listen: String, secretEnv: String?, environment: [String: String]) async -> Int32 {
        var secrets: [WebhookSigner.Secret] = []
        if let name = secretEnv {
            guard let text = environment[name], let secret = WebhookSigner.Secret(name: name, text: text) else {
                FileHandleOutput.stderr("iap-gateway: \(name) is not set to a whsec_ secret\n")
                return 2
            }
            secrets.append(secret)
        }
        var configuration = HTTPServer.Configuration()
        do { (configuration.host, configuration.port) = try ListenerSettings.address(listen, field: "--listen") } catch
        {
            FileHandleOutput.stderr("iap-gateway: \(error)\n")
            return 2
        }
        let verifying = secrets
        let server = HTTPServer(configuration: configuration) { request in
            let timestamp = request.header("webhook-timestamp").flatMap { Int64($0) }
            var line: [(key: String, value: JSONValue)] = [
                ("path", .string(request.path)),
                ("webhook_id", request.header("webhook-id").map { .string($0) } ?? .null),
            ]
            if let id = request.header("webhook-id"), let timestamp,
                let signature = request.header("webhook-signature"), !verifying.isEmpty
            {
                line.append(
                    (
                        "signature_valid",
                        .bool(
                            WebhookSigner.verify(
                                header: signature,
                                id: id,
                                timestamp: timestamp,
                                body: request.body,
                                secrets: verifying
                            )
                        )
                    )
                )
            }
            // A V1 body the gateway built from a V2 notification says so (docs/architecture.md, "The V1 shape of a V2 notification").
            if let source = request.header("X-IAP-Gateway-Source") { line.append(("source", .string(source))) }
            line.append(
                (
                    "body",
                    (try? JSONParser.parse(request.body)) ?? .string(String(decoding: request.body, as: UTF8.self))
                )
            )
            Log.writeStdout(String(decoding: JSONValue.object(JSONObject(line)).canonicalBytes(), as: UTF8.self) + "\n")
            return .json(200, Array(#"{"ok":true}"#.utf8))
        }
        do { try server.start() } catch {
            FileHandleOutput.stderr("iap-gateway: cannot listen on \(listen): \(error)\n")
            return 2
        }
        FileHandleOutput.stderr(
            "iap-gateway: receiving on http://\(configuration.host):\(server.port)/ (Ctrl-C to stop)\n"
        )
        await Signals.waitForTermination()
        server.stopAccepting()
        server.stop()
        return 0
    }
}
