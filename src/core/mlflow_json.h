// The MLflow wire form of the tracking model: protobuf JSON with snake_case names, int64 as
// numbers, enums by name, empty repeated fields left out, NaN and infinities as strings.
#pragma once

#include "core/model.h"
#include "core/registry.h"
#include "core/task.h"
#include "util/json_writer.h"

namespace cairn::core {

void WriteTags(JsonWriter& w, const std::vector<core::Tag>& tags);
void WriteParams(JsonWriter& w, const std::vector<core::Param>& params);
void WriteExperiment(JsonWriter& w, const core::Experiment& e);
void WriteRunInfo(JsonWriter& w, const core::RunInfo& info);
// With a run id, the metric carries it too (as get-history-bulk-interval's rows do).
void WriteMetric(JsonWriter& w, const core::Metric& m, std::string_view run_id = {});
void WriteRun(JsonWriter& w, const core::Run& run);
// The model registry's messages (model_registry.proto): a version's number is a string, and
// so is the version an alias names.
void WriteModelVersion(JsonWriter& w, const core::ModelVersion& v);
void WriteRegisteredModel(JsonWriter& w, const core::RegisteredModel& m);
// A piece of a run's console, as cairn's run-log API carries it.
void WriteConsoleChunk(JsonWriter& w, const core::ConsoleChunk& c);
// A task and an agent as cairn's task API carries them (docs/api/cairn.md); `spec`,
// `requirements` and `host` are JSON objects kept as text, written as they are.
void WriteTask(JsonWriter& w, const core::Task& t);
void WriteAgent(JsonWriter& w, const core::Agent& a);

}  // namespace cairn::core
