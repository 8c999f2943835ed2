#include "util/log.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>
#include <string>

namespace cairn {
namespace {

std::atomic<LogLevel> g_level{LogLevel::kInfo};
std::mutex g_mu;

const char* LevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug: return "DEBUG";
    case LogLevel::kInfo: return "INFO";
    case LogLevel::kWarning: return "WARN";
    case LogLevel::kError: return "ERROR";
  }
  return "?";
}

}  // namespace

void SetLogLevel(LogLevel level) { g_level.store(level); }
bool LogEnabled(LogLevel level) { return level >= g_level.load(std::memory_order_relaxed); }

void Log(LogLevel level, std::string_view message) {
  if (!LogEnabled(level)) return;
  auto now = std::chrono::system_clock::now();
  std::time_t secs = std::chrono::system_clock::to_time_t(now);
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()) % 1000;
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
  std::lock_guard<std::mutex> lock(g_mu);
  std::fprintf(stderr, "%s.%03dZ %-5s %.*s\n", stamp, static_cast<int>(ms.count()),
               LevelName(level), static_cast<int>(message.size()), message.data());
}

bool ParseLogLevel(std::string_view text, LogLevel* level) {
  if (text == "debug") *level = LogLevel::kDebug;
  else if (text == "info") *level = LogLevel::kInfo;
  else if (text == "warning" || text == "warn") *level = LogLevel::kWarning;
  else if (text == "error") *level = LogLevel::kError;
  else return false;
  return true;
}

}  // namespace cairn
