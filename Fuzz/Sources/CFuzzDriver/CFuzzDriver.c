// Header-only module: LLVMFuzzerRunDriver is defined by libFuzzer (libclang_rt.fuzzer), linked by -sanitize=fuzzer.
#include "CFuzzDriver.h"
