// What the `cairn env` subcommands share (env_command.cc, env_inspect_command.cc).
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cli/commands.h"
#include "util/status.h"

namespace cairn::cli {

struct EnvFlags {
  std::string project = ".";
  std::string lock;  // a lock file; default <project>/pylock.toml
  std::string output;
  std::string python;
  std::string link = "auto";
  std::string host;  // a host.json to check against instead of this host
  int jobs = 8;
  int keep = 3;
  std::string max_age = "30d";  // gc: unused wheels
  bool check = false;
  bool no_use = false;
  bool json = false;
  bool all = false;
  bool dry_run = false;
  bool no_files = false;
  std::vector<std::string> args;
};

// Prints the error; returns 2 for bad input, else 1.
int Fail(const Status& s);
// The project directory: --project, else the nearest directory upwards with cairn.yaml.
std::string ProjectDir(const EnvFlags& flags);
// --lock, else pylock.toml in the project.
std::string LockPathOf(const EnvFlags& flags);
// The active environment's prefix, or an error saying how to get one.
Result<std::string> ActiveOrExplain(const EnvFlags& flags);
// Adds `cairn env NAME` with the --project option; `run` gets its flags when it is chosen.
std::pair<CLI::App*, std::shared_ptr<EnvFlags>> AddEnvCommand(
    CLI::App* group, Action* action, const std::string& name, const std::string& help,
    std::function<int(const EnvFlags&)> run);
// `cairn env check|diff|snapshot|import-conda`, added to the `env` group.
void RegisterEnvInspect(CLI::App* group, Action* action);

}  // namespace cairn::cli
