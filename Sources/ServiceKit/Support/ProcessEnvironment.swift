internal import FoundationEssentials

#if canImport(Glibc)
import Glibc
#endif

/// The process environment, read in one place (secrets are named by variable in the config).
public enum ProcessEnvironment {
    public static var variables: [String: String] { ProcessInfo.processInfo.environment }

    /// Who runs this command, for the cutover log: the OS user name, else the uid.
    public static var userName: String {
        if let name = getpwuid(getuid())?.pointee.pw_name { return String(cString: name) }
        return variables["USER"] ?? "uid \(getuid())"
    }

    /// This process's name among gateway instances: the host name and the process id.
    public static var instanceName: String {
        var host = [CChar](repeating: 0, count: 256)
        let name =
            gethostname(&host, host.count - 1) == 0
            ? String(decoding: host.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : "host"
        return "\(name)-\(getpid())"
    }
}
