#pragma once
// TIDE_TSAN / TIDE_ASAN: 1 when this translation unit is built with
// ThreadSanitizer / AddressSanitizer (the tsan and asan presets), for the few
// places that tell a sanitizer about synchronization it cannot see, and for
// tests that cannot run under one. GCC defines __SANITIZE_*__, clang has
// __has_feature.

#if defined(__SANITIZE_THREAD__)
#define TIDE_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TIDE_TSAN 1
#endif
#endif
#ifndef TIDE_TSAN
#define TIDE_TSAN 0
#endif

#if defined(__SANITIZE_ADDRESS__)
#define TIDE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TIDE_ASAN 1
#endif
#endif
#ifndef TIDE_ASAN
#define TIDE_ASAN 0
#endif
