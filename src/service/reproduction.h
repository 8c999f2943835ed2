// The verdict of a reproduction (core/reproduce.h), given on the server: a run that repeats
// another (tag cairn.reproduce.of) is compared with it metric by metric, and their records
// (environment, code, datasets, output artifacts) are diffed. The task service gives it when a
// reproduction task ends; POST runs/reproduction gives it again with other tolerances.
#pragma once

#include <string>

#include "core/reproduce.h"
#include "service/artifact_service.h"
#include "service/tracking_service.h"

namespace cairn::service {

inline constexpr std::string_view kReproduceOfTag = "cairn.reproduce.of";
inline constexpr std::string_view kReproduceVerdictTag = "cairn.reproduce.verdict";
inline constexpr std::string_view kReproductionArtifact = "cairn/reproduce.json";

// Compares run `run_id` with `original_id`, records the verdict in `run_id` (tag
// cairn.reproduce.verdict and the artifact cairn/reproduce.json, ReproductionJson) and
// returns that record. kNotFound for a run that does not exist.
Result<std::string> RecordReproduction(TrackingService& tracking, ArtifactService& artifacts,
                                       const std::string& original_id, const std::string& run_id,
                                       const core::ReproduceOptions& options);

}  // namespace cairn::service
