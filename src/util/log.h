// Logging to stderr: one line per event with a UTC timestamp and a level. Cheap when the level
// is filtered out. Formatting is the caller's (fmt::format in .cc files).
#pragma once

#include <string_view>

namespace cairn {

enum class LogLevel { kDebug, kInfo, kWarning, kError };

void SetLogLevel(LogLevel level);
bool LogEnabled(LogLevel level);
void Log(LogLevel level, std::string_view message);

inline void LogInfo(std::string_view m) { Log(LogLevel::kInfo, m); }
inline void LogWarning(std::string_view m) { Log(LogLevel::kWarning, m); }
inline void LogError(std::string_view m) { Log(LogLevel::kError, m); }
inline void LogDebug(std::string_view m) {
  if (LogEnabled(LogLevel::kDebug)) Log(LogLevel::kDebug, m);
}

// Parses "debug", "info", "warning", "error"; false on anything else.
bool ParseLogLevel(std::string_view text, LogLevel* level);

}  // namespace cairn
