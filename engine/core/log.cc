#include "engine/core/log.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace tide {
namespace {

LogLevel levelFromEnv() {
  const char* v = std::getenv("TIDE_LOG");
  if (!v) return LogLevel::kWarn;
  if (!std::strcmp(v, "debug")) return LogLevel::kDebug;
  if (!std::strcmp(v, "info")) return LogLevel::kInfo;
  if (!std::strcmp(v, "error")) return LogLevel::kError;
  return LogLevel::kWarn;
}

std::atomic<int>& levelRef() {
  static std::atomic<int> level{static_cast<int>(levelFromEnv())};
  return level;
}

}  // namespace

LogLevel logLevel() {
  return static_cast<LogLevel>(levelRef().load(std::memory_order_relaxed));
}
void setLogLevel(LogLevel level) {
  levelRef().store(static_cast<int>(level));
}

void logLine(LogLevel level, const std::string& text) {
  static std::mutex mu;
  static const char* kNames[] = {"debug", "info", "warn", "error"};
  std::lock_guard<std::mutex> lock(mu);
  std::fprintf(stderr, "[tide %s] %s\n", kNames[static_cast<int>(level)], text.c_str());
}

}  // namespace tide
