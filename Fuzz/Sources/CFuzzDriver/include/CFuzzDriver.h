#ifndef CFUZZDRIVER_H
#define CFUZZDRIVER_H
#include <stddef.h>
#include <stdint.h>

/// libFuzzer's driver (compiler-rt, LLVM >= 12), linked in by -sanitize=fuzzer. The fuzz executables call it from
/// their Swift entry point because SwiftPM links executables with `--defsym main=<module>_main`, which hides
/// libFuzzer's own `main`.
int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));

#endif
