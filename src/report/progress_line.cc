#include "report/progress_line.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <utility>
#include <vector>

#include "report/run_report.h"
#include "util/file.h"

namespace cairn::report {
namespace {

// Lines of a failed step's log shown under its event.
constexpr int kLogTailLines = 6;

}  // namespace

std::string FormatElapsed(int64_t ms) {
  char buf[32];
  if (ms < 60'000) {
    std::snprintf(buf, sizeof buf, "%.1f s", ms / 1000.0);
  } else {
    std::snprintf(buf, sizeof buf, "%dm%02ds", static_cast<int>(ms / 60'000),
                  static_cast<int>(ms / 1000 % 60));
  }
  return buf;
}

ProgressLineOptions ProgressLine::ForStdout() {
  ProgressLineOptions options;
  const char* term = std::getenv("TERM");
  options.live = isatty(STDOUT_FILENO) == 1 && (term == nullptr || std::string(term) != "dumb");
  options.width = static_cast<size_t>(DetectOutputStyle().width);
  return options;
}

ProgressLine::ProgressLine(size_t steps, ProgressLineOptions options)
    : steps_(steps),
      options_(options),
      clock_(options.clock != nullptr ? options.clock : SystemClock()) {}

ProgressLine::~ProgressLine() { Finish(); }

void ProgressLine::Event(const std::string& what, const std::string& step,
                         const std::string& detail) {
  std::lock_guard<std::mutex> lock(mu_);
  ClearStatus();
  std::fprintf(options_.out, "  %-9s %-24s %s\n", what.c_str(), step.c_str(), detail.c_str());
  if (what == "started") {
    running_[step] = clock_->NowMillis();
  } else {
    running_.erase(step);
    if (what != "retry") ++finished_;  // a retry waits, then starts again
  }
  DrawStatus();
  std::fflush(options_.out);
}

void ProgressLine::FailedLog(const std::string& log_path) {
  std::lock_guard<std::mutex> lock(mu_);
  ClearStatus();
  std::fprintf(options_.out, "            log: %s\n", log_path.c_str());
  Result<std::string> text = ReadFile(log_path);
  if (text.ok() && !text->empty()) {
    size_t start = text->size();
    for (int lines = 0; start > 0;) {
      if ((*text)[start - 1] == '\n' && start != text->size() && ++lines == kLogTailLines) break;
      --start;
    }
    std::string tail = text->substr(start);
    size_t pos = 0;
    while (pos < tail.size()) {
      size_t end = tail.find('\n', pos);
      if (end == std::string::npos) end = tail.size();
      std::fprintf(options_.out, "            | %s\n", tail.substr(pos, end - pos).c_str());
      pos = end + 1;
    }
  }
  DrawStatus();
  std::fflush(options_.out);
}

void ProgressLine::Warning(const std::string& text) {
  std::lock_guard<std::mutex> lock(mu_);
  ClearStatus();
  std::fflush(options_.out);
  std::fprintf(options_.err, "warning: %s\n", text.c_str());
  DrawStatus();
  std::fflush(options_.out);
}

void ProgressLine::Note(const std::string& text) {
  std::lock_guard<std::mutex> lock(mu_);
  ClearStatus();
  std::fprintf(options_.out, "  %s\n", text.c_str());
  DrawStatus();
  std::fflush(options_.out);
}

void ProgressLine::Tick() {
  std::lock_guard<std::mutex> lock(mu_);
  if (options_.live && began_ && !running_.empty() && clock_->NowMillis() - drawn_ms_ >= 1000) {
    ClearStatus();
    DrawStatus();
    std::fflush(options_.out);
  }
}

void ProgressLine::Begin() {
  std::lock_guard<std::mutex> lock(mu_);
  began_ = true;
}

void ProgressLine::Finish() {
  std::lock_guard<std::mutex> lock(mu_);
  ClearStatus();
  began_ = false;
  std::fflush(options_.out);
}

void ProgressLine::ClearStatus() {
  if (!shown_) return;
  std::fputs("\r\033[K", options_.out);
  shown_ = false;
}

void ProgressLine::DrawStatus() {
  if (!options_.live || !began_) return;
  const int64_t now = clock_->NowMillis();
  std::string line = "[" + std::to_string(finished_) + "/" + std::to_string(steps_) + "]";
  if (!running_.empty()) {
    line += " running:";
    std::vector<std::pair<int64_t, std::string>> by_start;
    for (const auto& [step, started] : running_) by_start.push_back({started, step});
    std::sort(by_start.begin(), by_start.end());
    for (size_t k = 0; k < by_start.size(); ++k) {
      line += (k == 0 ? " " : ", ") + by_start[k].second + " " +
              std::to_string((now - by_start[k].first) / 1000) + "s";
    }
  }
  const size_t width = options_.width > 1 ? options_.width - 1 : 1;
  std::fputs(Truncate(line, width).c_str(), options_.out);
  shown_ = true;
  drawn_ms_ = now;
}

}  // namespace cairn::report
