#include "pipeline/budget.h"

#include <unistd.h>

#include <algorithm>
#include <thread>
#include <vector>

#include "env/host_facts.h"

namespace cairn::pipeline {
namespace {

// A limit no cluster reaches: on Slurm, what is not asked for is the scheduler's to limit.
constexpr int kUnlimitedJobs = 100;
constexpr double kUnlimitedCpus = 1e9;
constexpr int kUnlimitedGpus = 1 << 20;

Budget SlurmBudget(const BudgetRequest& request) {
  Budget b;
  b.jobs = request.jobs > 0 ? request.jobs : kUnlimitedJobs;
  b.cpus = request.cpus > 0 ? request.cpus : kUnlimitedCpus;
  b.gpus = request.gpus >= 0 ? request.gpus : kUnlimitedGpus;
  return b;
}

Budget LocalBudget(const Pipeline& pipeline, const BudgetRequest& request, const Machine& machine) {
  Budget b;
  b.cpus = request.cpus > 0 ? request.cpus : machine.cores;
  b.jobs = request.jobs > 0 ? request.jobs : static_cast<int>(std::max(1.0, b.cpus));
  b.memory_mib = machine.memory_mib;
  b.gpus = request.gpus >= 0 ? request.gpus : 0;
  if (request.gpus < 0) {
    const bool wanted = std::any_of(pipeline.steps.begin(), pipeline.steps.end(),
                                    [](const Step& s) { return s.resources.gpus > 0; });
    if (wanted && machine.gpus) b.gpus = machine.gpus();
  }
  return b;
}

}  // namespace

Machine ThisMachine() {
  Machine m;
  m.cores = std::max(1u, std::thread::hardware_concurrency());
  m.memory_mib = static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGE_SIZE) >> 20;
  m.gpus = [] {
    return static_cast<int>(env::CollectHostFacts(*env::RealHostProbe()).gpus.size());
  };
  return m;
}

Result<Budget> SizeBudget(const Pipeline& pipeline, const BudgetRequest& request,
                          const std::string& executor, const Machine& machine) {
  int64_t memory_mib = 0;
  if (!request.memory.empty()) {
    Result<int64_t> m = ParseMemory(request.memory);
    if (!m.ok()) return InvalidArgument("--memory: " + m.status().message());
    memory_mib = *m;
  }
  Budget b = executor == "slurm" ? SlurmBudget(request) : LocalBudget(pipeline, request, machine);
  if (!request.memory.empty()) b.memory_mib = memory_mib;
  if (std::vector<std::string> problems = Plan::CheckBudget(pipeline, b); !problems.empty()) {
    std::string message = "steps cannot run on this machine:";
    for (const std::string& p : problems) message += "\n  " + p;
    message += "\n(--gpus and --memory set the budget; --executor slurm runs steps on a cluster)";
    return FailedPrecondition(message);
  }
  return b;
}

}  // namespace cairn::pipeline
