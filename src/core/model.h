// The tracking domain: experiments, runs and what is logged to them. These are plain values
// shaped like MLflow's run model so that the REST layer maps them field by field; they carry no
// behaviour beyond name conversions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cairn::core {

enum class LifecycleStage { kActive, kDeleted };
enum class ViewType { kActiveOnly, kDeletedOnly, kAll };
enum class RunStatus { kRunning, kScheduled, kFinished, kFailed, kKilled };

std::string_view LifecycleStageName(LifecycleStage stage);  // "active", "deleted"
std::string_view ViewTypeName(ViewType view);               // "ACTIVE_ONLY", ...
std::string_view RunStatusName(RunStatus status);           // "RUNNING", ...
bool ParseViewType(std::string_view text, ViewType* out);
bool ParseRunStatus(std::string_view text, RunStatus* out);
bool ParseLifecycleStage(std::string_view text, LifecycleStage* out);
// Whether a run or experiment in `stage` is visible under `view`.
bool StageVisible(LifecycleStage stage, ViewType view);

struct Tag {
  std::string key;
  std::string value;
  bool operator==(const Tag&) const = default;
};

struct Param {
  std::string key;
  std::string value;
  bool operator==(const Param&) const = default;
};

struct Metric {
  std::string key;
  double value = 0;  // may be NaN or +-infinity
  int64_t timestamp = 0;
  int64_t step = 0;
};

// The ordering MLflow uses to pick a run's latest value of a metric: the largest
// (step, timestamp, value), with NaN above every number.
bool MetricIsNewer(const Metric& a, const Metric& b);
// Exact equality including NaN == NaN; used to drop duplicate points.
bool SameMetricPoint(const Metric& a, const Metric& b);

struct Experiment {
  std::string experiment_id;
  std::string name;
  std::string artifact_location;
  LifecycleStage lifecycle_stage = LifecycleStage::kActive;
  int64_t creation_time = 0;
  int64_t last_update_time = 0;
  std::vector<Tag> tags;
};

struct RunInfo {
  std::string run_id;
  std::string experiment_id;
  std::string run_name;
  std::string user_id;
  RunStatus status = RunStatus::kRunning;
  int64_t start_time = 0;
  std::optional<int64_t> end_time;
  std::string artifact_uri;
  LifecycleStage lifecycle_stage = LifecycleStage::kActive;
};

struct Dataset {
  std::string name;
  std::string digest;
  std::string source_type;
  std::string source;
  std::string schema;
  std::string profile;
};

struct DatasetInput {
  std::vector<Tag> tags;
  Dataset dataset;
};

struct RunData {
  std::vector<Metric> metrics;  // the latest value of each key
  std::vector<Param> params;
  std::vector<Tag> tags;
};

struct Run {
  RunInfo info;
  RunData data;
  std::vector<DatasetInput> inputs;

  const Tag* FindTag(std::string_view key) const;
  const Param* FindParam(std::string_view key) const;
  const Metric* FindMetric(std::string_view key) const;
};

// A piece of a run's console log: `data` (UTF-8 text) written to one stream at `timestamp`
// (ms), starting at byte `offset` of the log, which is every chunk's data in offset order.
enum class ConsoleStream { kStdout, kStderr };
std::string_view ConsoleStreamName(ConsoleStream stream);  // "stdout", "stderr"
bool ParseConsoleStream(std::string_view text, ConsoleStream* out);

struct ConsoleChunk {
  int64_t offset = 0;
  ConsoleStream stream = ConsoleStream::kStdout;
  int64_t timestamp = 0;
  std::string data;
};

// Tag keys with meaning to MLflow clients.
inline constexpr std::string_view kRunNameTag = "mlflow.runName";
inline constexpr std::string_view kUserTag = "mlflow.user";
inline constexpr std::string_view kDatasetContextTag = "mlflow.data.context";
inline constexpr std::string_view kLoggedModelsTag = "mlflow.log-model.history";

}  // namespace cairn::core
