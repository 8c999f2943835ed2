// What the command line prints about the model registry: a table of registered models, one
// model with its versions and aliases, one version with its lineage (the run that made it,
// through FormatRunDetails), and the history of an alias.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/registry.h"
#include "report/run_report.h"

namespace cairn::report {

// Columns name, latest version, aliases ("champion=3"), updated.
std::string FormatModelTable(std::span<const core::RegisteredModel> models,
                             const OutputStyle& style, int64_t now_millis);
// One JSON object per line: MLflow's RegisteredModel.
std::string ModelsJsonLines(std::span<const core::RegisteredModel> models);

// The model's description, tags and aliases, then its versions (newest first) with stage,
// status, aliases, run and source.
std::string FormatModelDetails(const core::RegisteredModel& model,
                               std::span<const core::ModelVersion> versions,
                               const OutputStyle& style, int64_t now_millis);

// The version, then "made by" and its run's details (code, environment, host, datasets,
// params, metrics) when the run is known.
std::string FormatVersionDetails(const core::ModelVersion& version,
                                 const std::optional<RunDetails>& run, const OutputStyle& style,
                                 int64_t now_millis);
// {"model_version": MLflow's ModelVersion, "run": RunDetailsJson or null}.
std::string VersionDetailsJson(const core::ModelVersion& version,
                               const std::optional<RunDetails>& run);

// One line per move, oldest first: time, alias, what it did, version, actor.
std::string FormatAliasHistory(std::span<const core::AliasMove> moves, const OutputStyle& style);

}  // namespace cairn::report
