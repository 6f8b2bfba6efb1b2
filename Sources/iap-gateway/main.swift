import Canonical
import Gateway
import HTTPClient
import V1Adapter

#if canImport(Glibc)
import Glibc
#endif

// Argument parsing and wiring only: every behaviour lives in the Gateway module.

let usage = """
    iap-gateway — Apple App Store Server Notifications (V1 and V2) gateway

    USAGE
      iap-gateway verify [--config FILE] [--root DER]... [--bundle-id B] [--environment production|sandbox]
                         [--app-apple-id N] [--shared-secret-env VAR] [--verify-receipt] FILE|FOLDER...
          Authenticate and normalize saved bodies: V2 notifications, bare signed transactions / renewal infos,
          V1 notifications (secrets from --config or --shared-secret-env; events from the body, verified: false,
          unless --verify-receipt asks the config's verifyReceipt URLs) and saved verifyReceipt answers.
          A FOLDER means its *.json files (golden *.expected.json skipped). One JSON line per file;
          exit 0 when all are ok, 1 otherwise.
      iap-gateway bench verify [--seconds N]
          Verification throughput against libcrypto's own P-256 verify bound (build with -c release).
      iap-gateway help

    """

func printLine(_ s: String) {
    print(s)
}

func fail(_ message: String, status: Int32 = 2) -> Never {
    FileHandleOutput.stderr("iap-gateway: \(message)\n")
    exit(status)
}

let args = Array(CommandLine.arguments.dropFirst())
guard let verb = args.first else {
    FileHandleOutput.stderr(usage)
    exit(2)
}
let rest = Array(args.dropFirst())

switch verb {
case "verify":
    let a: Arguments
    do {
        a = try Arguments(
            rest, valueFlags: ["config", "root", "bundle-id", "environment", "app-apple-id", "shared-secret-env"],
            switchFlags: ["verify-receipt"])
    } catch { fail(error.description) }
    guard !a.positionals.isEmpty else { fail("verify needs at least one FILE") }
    var options = VerifyCommand.Options()
    options.configPath = a.value("config")
    options.extraRoots = a.all("root")
    options.bundleID = a.value("bundle-id")
    options.sharedSecretEnv = a.value("shared-secret-env")
    if let e = a.value("environment") {
        guard e == "production" || e == "sandbox" else { fail("--environment must be production or sandbox") }
        options.environment = AppStoreEnvironment(rawValue: e)
    }
    if let n = a.value("app-apple-id") {
        guard let id = Int64(n) else { fail("--app-apple-id must be an integer") }
        options.appAppleID = id
    }
    var receiptClient: VerifyReceiptClient?
    if a.has("verify-receipt") {
        guard let path = options.configPath else { fail("--verify-receipt needs --config (verifyReceipt URLs, secrets)") }
        do {
            receiptClient = try GatewayConfig.load(path: path).verifyReceiptClient(transport: CurlTransport())
        } catch { fail("config: \(error)") }
    }
    let command: VerifyCommand
    do { command = try VerifyCommand(options: options, receiptClient: receiptClient) } catch { fail("config: \(error)") }
    var allOK = true
    for file in VerifyCommand.expand(paths: a.positionals) {
        let report = await command.run(file: file)
        allOK = allOK && report.ok
        printLine(JSONOutput.string(report))
    }
    exit(allOK ? 0 : 1)

case "bench":
    let a: Arguments
    do { a = try Arguments(rest, valueFlags: ["seconds"]) } catch { fail(error.description) }
    guard a.positionals.first == "verify" else { fail("bench needs a target: verify") }
    let seconds = Double(a.value("seconds") ?? "3") ?? 3
    do {
        let result = try VerifyBenchmark.run(secondsPerPhase: seconds)
        printLine(JSONOutput.string(result))
    } catch {
        fail("bench failed: \(error)", status: 1)
    }
    exit(0)

case "help", "--help", "-h":
    print(usage, terminator: "")
    exit(0)

default:
    FileHandleOutput.stderr(usage)
    fail("unknown command \(verb)")
}
