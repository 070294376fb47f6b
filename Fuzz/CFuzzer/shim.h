#include <stddef.h>
#include <stdint.h>

// libFuzzer's driver (LLVM 11+), linked in by -sanitize=fuzzer: runs the fuzzing loop on `callback`.
int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));
