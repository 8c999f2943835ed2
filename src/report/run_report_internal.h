// Pieces the run report's files share (run_report.cc, run_details.cc): not part of the report's
// interface.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/model.h"

namespace cairn::report::internal {

// What a cell shows for a value a run does not have.
inline constexpr std::string_view kMissing = "-";

std::string TagValue(const core::Run& run, std::string_view key);
// The run's name, or its mlflow.runName tag.
std::string RunName(const core::Run& run);
// Exact text of a metric value, for telling values apart (display rounds to 6 digits).
std::string ExactMetric(double value);
// Metrics `cairn run` logs about the machine (system/...).
bool IsSystemMetric(std::string_view key);
// Lines "<indent>key  value" with the values aligned; multi-line values continue under the
// value. Control characters print as spaces.
std::string KeyValueBlock(const std::vector<std::pair<std::string, std::string>>& items,
                          std::string_view indent);

}  // namespace cairn::report::internal
