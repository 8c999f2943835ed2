// The MLflow wire form of the tracking model: protobuf JSON with snake_case names, int64 as
// numbers, enums by name, empty repeated fields left out, NaN and infinities as strings.
#pragma once

#include "core/model.h"
#include "util/json_writer.h"

namespace cairn::server {

void WriteTags(JsonWriter& w, const std::vector<core::Tag>& tags);
void WriteExperiment(JsonWriter& w, const core::Experiment& e);
void WriteRunInfo(JsonWriter& w, const core::RunInfo& info);
void WriteMetric(JsonWriter& w, const core::Metric& m);
void WriteRun(JsonWriter& w, const core::Run& run);

}  // namespace cairn::server
