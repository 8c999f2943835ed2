// The budget a pipeline run's steps share (plan.h's Budget), sized from the command line's
// request and the machine. The local executor's share is this machine's cpus and memory and
// no GPUs unless a step wants one (then the GPUs nvidia-smi lists); on Slurm the cluster
// decides, so only what is asked for limits it. A budget no step's needs fit in is refused
// beforehand, with every such step named, rather than left to wait forever.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "pipeline/plan.h"
#include "pipeline/spec.h"
#include "util/status.h"

namespace cairn::pipeline {

// What the command line asks for; each unset field takes the machine's share.
struct BudgetRequest {
  int jobs = 0;        // 0: one per cpu
  double cpus = 0;     // 0: the machine's
  std::string memory;  // "": the machine's ("16G", as ParseMemory reads)
  int gpus = -1;       // -1: the machine's
};

// What this machine has. `gpus` is asked only when a step wants a GPU (it runs nvidia-smi).
struct Machine {
  double cores = 1;
  int64_t memory_mib = 0;
  std::function<int()> gpus;
};

// This machine, as the kernel and nvidia-smi (none without it) describe it.
Machine ThisMachine();

// The budget for running `pipeline` on `executor` ("local" or "slurm"). InvalidArgument for a
// --memory that is not an amount of memory; FailedPrecondition, naming each step and what it
// lacks, when some step can never run within the budget.
Result<Budget> SizeBudget(const Pipeline& pipeline, const BudgetRequest& request,
                          const std::string& executor, const Machine& machine);

}  // namespace cairn::pipeline
