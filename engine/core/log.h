#pragma once
// Minimal leveled logging to stderr. Level from TIDE_LOG (debug|info|warn|error),
// default warn, so benchmark output stays clean.

#include <fmt/format.h>

#include <string>

namespace tide {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };

LogLevel logLevel();
void setLogLevel(LogLevel level);
void logLine(LogLevel level, const std::string& text);

template <typename... Args>
void logAt(LogLevel level, fmt::format_string<Args...> f, Args&&... args) {
  if (level < logLevel()) return;
  logLine(level, fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace tide

#define TIDE_LOG_DEBUG(...) ::tide::logAt(::tide::LogLevel::kDebug, __VA_ARGS__)
#define TIDE_LOG_INFO(...) ::tide::logAt(::tide::LogLevel::kInfo, __VA_ARGS__)
#define TIDE_LOG_WARN(...) ::tide::logAt(::tide::LogLevel::kWarn, __VA_ARGS__)
#define TIDE_LOG_ERROR(...) ::tide::logAt(::tide::LogLevel::kError, __VA_ARGS__)
