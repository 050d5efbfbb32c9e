// SPDX-License-Identifier: Apache-2.0
// Only the declaration in include/CFuzzDriver.h; libFuzzer defines the function.
#include "CFuzzDriver.h"
