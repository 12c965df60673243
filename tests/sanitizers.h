#pragma once
// Which sanitizer this test binary is built with (the asan and tsan presets),
// for the few tests that cannot run under one and skip with a reason instead.

#include "engine/core/sanitizers.h"

namespace tide::testing {

inline constexpr bool kThreadSanitizer = TIDE_TSAN;
inline constexpr bool kAddressSanitizer = TIDE_ASAN;

inline constexpr bool kAnySanitizer = kThreadSanitizer || kAddressSanitizer;

// How much slower code runs here; tests that bound a failure's time by a short
// timeout scale both (as tide_test scales ctest timeouts).
inline constexpr double kTimeScale = kThreadSanitizer ? 4 : kAddressSanitizer ? 2 : 1;

// ThreadSanitizer cannot run a forked child of a threaded process that starts
// threads itself (it aborts: "starting new threads after multi-threaded fork").
inline constexpr const char* kTsanForkReason =
    "ThreadSanitizer: the forked child of this threaded test starts threads, which tsan does "
    "not support (fork+exec peers are tested instead)";

}  // namespace tide::testing
