// What a queued task runs (the `spec` of core::Task, docs/agents.md, "The task spec"): the
// command, its parameters, the code snapshot it runs in and the environment lock it runs with.
// `cairn run --queue` and `cairn clone` write it; agents read it. The server keeps it as given.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/reproduce.h"
#include "util/status.h"

namespace cairn::core {

struct TaskCode {
  std::string snapshot;  // SHA-256 of the snapshot's manifest; "" for none
  std::string run_id;    // the run whose artifacts hold it (cairn/task/...)
  std::string cwd;       // where the command runs, relative to the snapshot's root
  int64_t files = 0;
  int64_t bytes = 0;
  // Where the snapshot came from, for people and for MLflow's git tags.
  std::string commit;
  std::string branch;
  std::string remote_url;
  bool dirty = false;
};

struct TaskEnvironment {
  std::string run_id;     // the run whose artifact cairn/task/pylock.toml is the lock; "": none
  std::string lock_hash;  // env::LockHash of it
};

// A reproduction's task: the run it repeats and how the two are compared. The server records
// the verdict when the task ends (service/reproduction.h).
struct TaskReproduction {
  std::string of;  // the original run; "": the task is no reproduction
  ReproduceOptions options;
};

struct TaskSpec {
  std::vector<std::string> command;
  std::map<std::string, std::string> params;
  TaskCode code;
  TaskEnvironment environment;
  TaskReproduction reproduce;
};

inline constexpr std::string_view kTaskLockArtifact = "cairn/task/pylock.toml";

std::string TaskSpecJson(const TaskSpec& spec);
// InvalidArgument naming what is wrong; a spec without a command is wrong.
Result<TaskSpec> ParseTaskSpec(std::string_view json);
// The runs a spec names, whatever else it holds: its code's, its environment's and the one it
// reproduces. Those whose records the task would read, so their readers alone may name them.
std::vector<std::string> TaskSpecRuns(std::string_view json);

// The command with every ${params.NAME} replaced by the parameter's value.
std::vector<std::string> SubstituteParams(const std::vector<std::string>& command,
                                          const std::map<std::string, std::string>& params);
// CAIRN_PARAM_<NAME>: the name upper-cased, other characters than letters and digits as '_'.
std::string ParamVariable(std::string_view name);

}  // namespace cairn::core
