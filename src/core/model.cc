#include "core/model.h"

#include <cmath>
#include <tuple>

namespace cairn::core {

std::string_view LifecycleStageName(LifecycleStage stage) {
  return stage == LifecycleStage::kActive ? "active" : "deleted";
}

std::string_view ViewTypeName(ViewType view) {
  switch (view) {
    case ViewType::kActiveOnly: return "ACTIVE_ONLY";
    case ViewType::kDeletedOnly: return "DELETED_ONLY";
    case ViewType::kAll: return "ALL";
  }
  return "ACTIVE_ONLY";
}

std::string_view RunStatusName(RunStatus status) {
  switch (status) {
    case RunStatus::kRunning: return "RUNNING";
    case RunStatus::kScheduled: return "SCHEDULED";
    case RunStatus::kFinished: return "FINISHED";
    case RunStatus::kFailed: return "FAILED";
    case RunStatus::kKilled: return "KILLED";
  }
  return "RUNNING";
}

std::string_view ConsoleStreamName(ConsoleStream stream) {
  return stream == ConsoleStream::kStderr ? "stderr" : "stdout";
}

bool ParseConsoleStream(std::string_view text, ConsoleStream* out) {
  if (text == "stdout") {
    *out = ConsoleStream::kStdout;
  } else if (text == "stderr") {
    *out = ConsoleStream::kStderr;
  } else {
    return false;
  }
  return true;
}

bool ParseViewType(std::string_view text, ViewType* out) {
  if (text == "ACTIVE_ONLY" || text == "1") *out = ViewType::kActiveOnly;
  else if (text == "DELETED_ONLY" || text == "2") *out = ViewType::kDeletedOnly;
  else if (text == "ALL" || text == "3") *out = ViewType::kAll;
  else return false;
  return true;
}

bool ParseRunStatus(std::string_view text, RunStatus* out) {
  if (text == "RUNNING" || text == "1") *out = RunStatus::kRunning;
  else if (text == "SCHEDULED" || text == "2") *out = RunStatus::kScheduled;
  else if (text == "FINISHED" || text == "3") *out = RunStatus::kFinished;
  else if (text == "FAILED" || text == "4") *out = RunStatus::kFailed;
  else if (text == "KILLED" || text == "5") *out = RunStatus::kKilled;
  else return false;
  return true;
}

bool ParseLifecycleStage(std::string_view text, LifecycleStage* out) {
  if (text == "active") *out = LifecycleStage::kActive;
  else if (text == "deleted") *out = LifecycleStage::kDeleted;
  else return false;
  return true;
}

bool StageVisible(LifecycleStage stage, ViewType view) {
  switch (view) {
    case ViewType::kActiveOnly: return stage == LifecycleStage::kActive;
    case ViewType::kDeletedOnly: return stage == LifecycleStage::kDeleted;
    case ViewType::kAll: return true;
  }
  return false;
}

namespace {

// Orders values with NaN above every number, as MLflow's latest-metric rule does.
int CompareValues(double a, double b) {
  bool an = std::isnan(a), bn = std::isnan(b);
  if (an || bn) return an == bn ? 0 : (an ? 1 : -1);
  return a < b ? -1 : (a > b ? 1 : 0);
}

}  // namespace

bool MetricIsNewer(const Metric& a, const Metric& b) {
  if (a.step != b.step) return a.step > b.step;
  if (a.timestamp != b.timestamp) return a.timestamp > b.timestamp;
  return CompareValues(a.value, b.value) > 0;
}

bool SameMetricPoint(const Metric& a, const Metric& b) {
  return a.key == b.key && a.step == b.step && a.timestamp == b.timestamp &&
         CompareValues(a.value, b.value) == 0;
}

const Tag* Run::FindTag(std::string_view key) const {
  for (const Tag& t : data.tags) {
    if (t.key == key) return &t;
  }
  return nullptr;
}

const Param* Run::FindParam(std::string_view key) const {
  for (const Param& p : data.params) {
    if (p.key == key) return &p;
  }
  return nullptr;
}

const Metric* Run::FindMetric(std::string_view key) const {
  for (const Metric& m : data.metrics) {
    if (m.key == key) return &m;
  }
  return nullptr;
}

}  // namespace cairn::core
