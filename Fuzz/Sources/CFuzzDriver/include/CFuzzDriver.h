// SPDX-License-Identifier: Apache-2.0
#ifndef SLUICE_CFUZZDRIVER_H
#define SLUICE_CFUZZDRIVER_H
#include <stddef.h>
#include <stdint.h>

/// libFuzzer's driver (linked by -sanitize=fuzzer): runs `test` on every input, with libFuzzer's
/// command-line options. The fuzz targets call it from their own `main`, because SwiftPM gives
/// every executable a `main` of its own.
int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*test)(const uint8_t *data, size_t size));

#endif
