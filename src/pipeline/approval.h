// Decisions on steps that wait for approval (`approve: {by: NAME}` in pipeline.yaml). A tracked
// run's decisions are tags of the step's run on the server (the tracker reads them; the server's
// POST /api/cairn/v1/runs/approval writes them, checking who decides); a run that is not tracked
// keeps them in its directory, approvals/<step>.json, where `cairn pipeline approve` writes them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "util/status.h"

namespace cairn::pipeline {

struct ApprovalDecision {
  bool approved = false;
  std::string by;  // who decided
  std::string comment;
  int64_t time_ms = 0;
};

// The decision recorded for `step` in the run directory `run_dir`; nullopt when there is none.
std::optional<ApprovalDecision> ReadLocalDecision(const std::string& run_dir,
                                                  const std::string& step);
// Records it; kAlreadyExists when the step has a decision already.
Status WriteLocalDecision(const std::string& run_dir, const std::string& step,
                          const ApprovalDecision& decision);

}  // namespace cairn::pipeline
