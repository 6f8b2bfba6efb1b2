import GatewayCLI

#if canImport(Glibc)
import Glibc
#endif

// Every command lives in the GatewayCLI module (one file each); this is only the process's entry point.
exit(await GatewayCLI.main(CommandLine.arguments))
