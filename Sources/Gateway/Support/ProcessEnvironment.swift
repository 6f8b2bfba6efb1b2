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
}
